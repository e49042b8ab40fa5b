package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/proto/jobspb"
)

// ErrInvalidWatermark wraps every error about the watermark options
// themselves (as opposed to the PDF): like a *BadInputError it is the
// client's fault. The gateway validates the options (pdfopts.ParseWatermark),
// so a worker seeing it means the two disagree.
var ErrInvalidWatermark = errors.New("invalid watermark")

// Defaults of DESIGN §4.17, applied by Watermark to fields left at their
// zero value where zero is meaningless. Opacity 0 and rotation 0 are taken
// literally: the gateway fills in 0.3 and 45 when the client leaves them out.
const (
	DefaultFontSize = 48
	DefaultColor    = "#888888"
	DefaultPosition = "center"
	DefaultPages    = "all"
)

// ImageScale is the width of an image watermark relative to the page width
// (pdfcpu's relative scale factor): the stamp adapts to any page size.
const ImageScale = 0.5

// edgeMargin keeps a stamp anchored at an edge or corner this many points
// away from the page border.
const edgeMargin = 24

// positions maps DESIGN §4.17 positions to pdfcpu anchors and the sign of the
// edge margin offset (dx, dy).
var positions = map[string]struct {
	anchor string
	dx, dy int
}{
	"center":        {"c", 0, 0},
	"top-left":      {"tl", 1, -1},
	"top-center":    {"tc", 0, -1},
	"top-right":     {"tr", -1, -1},
	"left":          {"l", 1, 0},
	"right":         {"r", -1, 0},
	"bottom-left":   {"bl", 1, 1},
	"bottom-center": {"bc", 0, 1},
	"bottom-right":  {"br", -1, 1},
}

// Watermark stamps wm onto the pages of in selected by wm.Pages, on top of
// the page content, and writes the result to w.
//
// wm holds either Text (Helvetica, FontSize points, Color) or ImagePng (a PNG,
// ImageScale of the page width). Opacity (0..1), Rotation (degrees,
// counter-clockwise) and Position (center, top-left, top-center, top-right,
// left, right, bottom-left, bottom-center, bottom-right) apply to both.
// Pages is "all" or ranges like "1-3,5" (see ParsePages); pages beyond the
// document select nothing, and when nothing is selected (or wm is nil) the
// input is copied to w unchanged.
//
// A bad input PDF gives a *BadInputError (with an empty Name; a defect found
// only while writing may leave partial output in w); bad options
// give an error wrapping ErrInvalidWatermark. Text characters outside the
// Windows-1252 repertoire of the core fonts are drawn as spaces.
func Watermark(ctx context.Context, in io.ReadSeeker, w io.Writer, wm *jobspb.Watermark) error {
	if w == nil {
		return errors.New("pdfedit: watermark: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if wm == nil {
		return copyInput(ctx, in, w)
	}
	if err := checkWatermark(wm); err != nil {
		return err
	}

	pc, err := readPDF(ctx, "", in, newConf(model.ADDWATERMARKS))
	if err != nil {
		return err
	}
	pages, err := ParsePages(wm.GetPages(), pc.PageCount)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidWatermark, err)
	}
	if len(pages) == 0 {
		// pdfcpu reads an empty selection as "all pages": handle it here.
		return copyInput(ctx, in, w)
	}
	mwm, err := pdfcpuWatermark(wm)
	if err != nil {
		return err
	}
	sel := make(types.IntSet, len(pages))
	for _, p := range pages {
		sel[p] = true
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := stamp(pc, sel, mwm); err != nil {
		return err
	}
	return save(ctx, pc, w)
}

func copyInput(ctx context.Context, in io.ReadSeeker, w io.Writer) error {
	if err := sniffPDF("", in); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("pdfedit: copy PDF: %w", err)
	}
	return nil
}

// stamp applies mwm; a pdfcpu failure here is blamed on the PDF (the options
// were checked before), a panic included.
func stamp(pc *model.Context, sel types.IntSet, mwm *model.Watermark) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &BadInputError{Reason: fmt.Sprintf("cannot watermark this PDF (%v)", r)}
		}
	}()
	if err := pdfcpu.AddWatermarks(pc, sel, mwm); err != nil {
		return &BadInputError{Reason: "cannot watermark this PDF: " + truncate(err.Error())}
	}
	return nil
}

// checkWatermark validates the options that do not depend on the PDF.
func checkWatermark(wm *jobspb.Watermark) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidWatermark, fmt.Sprintf(format, args...))
	}
	hasText := strings.TrimSpace(wm.GetText()) != ""
	hasImage := len(wm.GetImagePng()) > 0
	switch {
	case hasText && hasImage:
		return bad("give text or image, not both")
	case !hasText && !hasImage:
		return bad("needs text or image")
	case hasImage:
		// Bounded by its header first (a few bytes may declare billions of
		// pixels), then decoded in full, so that a damaged image is not
		// later blamed on the PDF.
		if len(wm.GetImagePng()) > limits.WatermarkImageBytes {
			return bad("image is over %d bytes", limits.WatermarkImageBytes)
		}
		if _, err := limits.Image(wm.GetImagePng(), limits.WatermarkImagePixels); err != nil {
			return bad("image: %v", err)
		}
		if _, err := png.Decode(bytes.NewReader(wm.GetImagePng())); err != nil {
			return bad("image is not a valid PNG: %v", err)
		}
	}
	if fs := wm.GetFontSize(); math.IsNaN(fs) || fs < 0 || fs > 10000 {
		return bad("fontSize %v out of range", fs)
	}
	if _, err := hexColor(wm.GetColor()); err != nil {
		return bad("%v", err)
	}
	if o := wm.GetOpacity(); math.IsNaN(o) || o < 0 || o > 1 {
		return bad("opacity %v not between 0 and 1", o)
	}
	if r := wm.GetRotation(); math.IsNaN(r) || math.IsInf(r, 0) {
		return bad("rotation %v is not a number", r)
	}
	if _, ok := positions[position(wm)]; !ok {
		return bad("unknown position %q", wm.GetPosition())
	}
	if _, err := ParsePages(wm.GetPages(), 1); err != nil {
		return bad("%v", err)
	}
	return nil
}

func position(wm *jobspb.Watermark) string {
	p := strings.ToLower(strings.TrimSpace(wm.GetPosition()))
	if p == "" {
		return DefaultPosition
	}
	return p
}

// hexColor normalises "#rgb" or "#rrggbb" (empty: DefaultColor) to "#rrggbb".
func hexColor(c string) (string, error) {
	c = strings.TrimSpace(c)
	if c == "" {
		return DefaultColor, nil
	}
	if len(c) != 4 && len(c) != 7 || c[0] != '#' {
		return "", fmt.Errorf("color %q is not #rgb or #rrggbb", c)
	}
	if _, err := strconv.ParseUint(c[1:], 16, 32); err != nil {
		return "", fmt.Errorf("color %q is not #rgb or #rrggbb", c)
	}
	if len(c) == 4 {
		c = string([]byte{'#', c[1], c[1], c[2], c[2], c[3], c[3]})
	}
	return strings.ToUpper(c), nil
}

// normRotation maps any angle to pdfcpu's range -180..180.
func normRotation(r float64) float64 {
	r = math.Mod(r, 360)
	if r > 180 {
		r -= 360
	} else if r < -180 {
		r += 360
	}
	return r
}

func fmtFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// pdfcpuWatermark turns checked options into a pdfcpu stamp (OnTop).
func pdfcpuWatermark(wm *jobspb.Watermark) (*model.Watermark, error) {
	pos := positions[position(wm)]
	color, _ := hexColor(wm.GetColor())
	common := []string{
		"opacity:" + fmtFloat(wm.GetOpacity()),
		"rotation:" + fmtFloat(normRotation(wm.GetRotation())),
		"position:" + pos.anchor,
		fmt.Sprintf("offset:%d %d", pos.dx*edgeMargin, pos.dy*edgeMargin),
	}

	if img := wm.GetImagePng(); len(img) > 0 {
		desc := strings.Join(append([]string{"scalefactor:" + fmtFloat(ImageScale) + " rel"}, common...), ", ")
		mwm, err := api.ImageWatermarkForReader(bytes.NewReader(img), desc, true, false, types.POINTS)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidWatermark, err)
		}
		return mwm, nil
	}

	size := int(math.Round(wm.GetFontSize()))
	if size <= 0 {
		size = DefaultFontSize
	}
	desc := strings.Join(append([]string{
		"fontname:Helvetica",
		"points:" + strconv.Itoa(size),
		"scalefactor:1 abs",
		"fillcolor:" + color,
		"strokecolor:" + color,
	}, common...), ", ")
	mwm, err := pdfcpu.ParseTextWatermarkDetails(winAnsiText(wm.GetText()), desc, true, types.POINTS)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidWatermark, err)
	}
	return mwm, nil
}

// winAnsiText prepares text for pdfcpu's core fonts, which map each rune
// <= 0xFF to that byte of WinAnsiEncoding: the Windows-1252 characters in
// 0x80..0x9F (curly quotes, dashes, euro, ...) are moved to their codes; the
// C1 controls those codes stand for in Unicode, and tabs, become spaces.
// Newlines (and, pdfcpu's convention, a literal backslash-n) break lines.
func winAnsiText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			continue
		case r == '\t' || r >= 0x80 && r <= 0x9f:
			r = ' '
		case r > 0xff:
			if c, ok := cp1252[r]; ok {
				r = rune(c)
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

var cp1252 = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87,
	'ˆ': 0x88, '‰': 0x89, 'Š': 0x8a, '‹': 0x8b, 'Œ': 0x8c, 'Ž': 0x8e,
	'‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '•': 0x95, '–': 0x96, '—': 0x97,
	'˜': 0x98, '™': 0x99, 'š': 0x9a, '›': 0x9b, 'œ': 0x9c, 'ž': 0x9e, 'Ÿ': 0x9f,
}
