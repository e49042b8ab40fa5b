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
	"unicode"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/font"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// ErrInvalidWatermark wraps every error about the watermark options
// themselves (as opposed to the PDF): like a *BadInputError it is the
// client's fault. The options are checked by pdfopts.CheckWatermark, the
// gateway's own rules, and the PNG by decoding it (the gateway reads only
// its header).
var ErrInvalidWatermark = errors.New("invalid watermark")

// ImageScale is the width of an image watermark relative to the page width
// (pdfcpu's relative scale factor): the stamp adapts to any page size.
const ImageScale = 0.5

// edgeMargin keeps a stamp anchored at an edge or corner this many points
// away from the page border.
const edgeMargin = 24

// positions maps DESIGN §4.17 positions (pdfopts.WatermarkPositions, which
// checkWatermark enforces) to pdfcpu anchors and the sign of the edge margin
// offset (dx, dy).
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
// The limits are the gateway's (pdfopts.CheckWatermark); a font size,
// colour, position or pages left at zero is the default
// (pdfopts.WatermarkWithDefaults).
// Pages is "all" or ranges like "1-3,5" (see ParsePages); pages beyond the
// document select nothing, and when nothing is selected (or wm is nil) the
// input is copied to w unchanged.
//
// A bad input PDF gives a *BadInputError (with an empty Name; a defect found
// only while writing may leave partial output in w); bad options
// give an error wrapping ErrInvalidWatermark. Text characters outside the
// Windows-1252 repertoire of the core fonts are drawn as spaces.
//
// The stamp is an artifact, not content of the document's structure:
// pdfcpu draws it with one form XObject per page, invoked from the page's
// content inside /Artifact <</Type /Pagination /Subtype /Watermark>> BDC …
// EMC (PDF/UA 7.1-3), in an optional content group "Watermark".
func Watermark(ctx context.Context, in io.ReadSeeker, w io.Writer, wm *jobspb.Watermark) error {
	return WatermarkWith(ctx, in, w, wm, WatermarkOptions{})
}

// WatermarkOptions say how Watermark stamps, beyond the watermark itself.
type WatermarkOptions struct {
	// Record is a document of record (DESIGN §8: PDF/A or PDF/UA). Text is
	// set in EmbeddedFont, a subset embedded with a ToUnicode map (PDF/A
	// 6.2.11.4.1, 6.2.11.7.2; PDF/UA 7.21.4.1), instead of the core font
	// Helvetica, which is never embedded; characters the font lacks are
	// drawn as spaces. The optional content configuration the stamp
	// creates gets a Name, an Order listing its group and no AS (PDF/A
	// 6.9, PDF/UA 7.10). Without it, the stamp is as fast as ever.
	Record bool
}

// WatermarkWith is Watermark with options o.
func WatermarkWith(ctx context.Context, in io.ReadSeeker, w io.Writer, wm *jobspb.Watermark, o WatermarkOptions) error {
	if w == nil {
		return errors.New("pdfedit: watermark: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if wm == nil {
		return copyInput(ctx, in, w)
	}
	wm = pdfopts.WatermarkWithDefaults(wm)
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
	mwm, err := pdfcpuWatermark(wm, o.Record)
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
	hadOC := hasOptionalContent(pc)
	if err := stamp(pc, sel, mwm); err != nil {
		return err
	}
	if o.Record && !hadOC {
		if err := conformStampOC(pc); err != nil {
			return err
		}
	}
	return save(ctx, pc, w)
}

// hasOptionalContent reports whether the PDF has optional content
// properties already; pdfcpu then puts the stamp in its first group and
// leaves its configurations alone.
func hasOptionalContent(pc *model.Context) bool {
	root, err := pc.Catalog()
	if err != nil {
		return false
	}
	_, ok := root.Find("OCProperties")
	return ok
}

// stampOCName names the optional content configuration of a stamp.
const stampOCName = "Watermark"

// conformStampOC makes the optional content configuration pdfcpu created
// for the stamp one PDF/A (6.9-1…4) and PDF/UA (7.10-1/2) accept: a Name,
// an Order that lists every group, and no AS (pdfcpu writes AS with View,
// Print and Export usage events, and an empty Order). The groups' own
// Usage dictionaries stay: they say the stamp is shown, printed and
// exported.
func conformStampOC(pc *model.Context) error {
	root, err := pc.Catalog()
	if err != nil {
		return fmt.Errorf("pdfedit: watermark: catalog: %w", err)
	}
	props, err := pc.DereferenceDict(root["OCProperties"])
	if err != nil || props == nil {
		return fmt.Errorf("pdfedit: watermark: no optional content properties after stamping (%v)", err)
	}
	groups, err := pc.DereferenceArray(props["OCGs"])
	if err != nil {
		return fmt.Errorf("pdfedit: watermark: optional content groups: %w", err)
	}
	config, err := pc.DereferenceDict(props["D"])
	if err != nil || config == nil {
		return fmt.Errorf("pdfedit: watermark: no default optional content configuration (%v)", err)
	}
	config.Delete("AS")
	config["Name"] = types.StringLiteral(stampOCName)
	config["Order"] = append(types.Array{}, groups...)
	return nil
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

// checkWatermark validates the options that do not depend on the PDF: by
// the gateway's rules, then by decoding the PNG, as pdfcpu will (the gateway
// reads only its header), so that a damaged image is not blamed on the PDF.
func checkWatermark(wm *jobspb.Watermark) error {
	if err := pdfopts.CheckWatermark(wm); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWatermark, err)
	}
	if img := wm.GetImagePng(); len(img) > 0 {
		if _, err := png.Decode(bytes.NewReader(img)); err != nil {
			return fmt.Errorf("%w: image is not a valid PNG: %w", ErrInvalidWatermark, err)
		}
	}
	return nil
}

// position is wm's checked position in lower case.
func position(wm *jobspb.Watermark) string {
	return strings.ToLower(strings.TrimSpace(wm.GetPosition()))
}

// hexColor expands a checked "#rgb" or "#rrggbb" to "#RRGGBB".
func hexColor(c string) string {
	if len(c) == 4 {
		c = string([]byte{'#', c[1], c[1], c[2], c[2], c[3], c[3]})
	}
	return strings.ToUpper(c)
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

// pdfcpuWatermark turns checked options into a pdfcpu stamp (OnTop); text
// in EmbeddedFont when embed is set (WatermarkOptions.Record), otherwise in
// Helvetica.
func pdfcpuWatermark(wm *jobspb.Watermark, embed bool) (*model.Watermark, error) {
	pos := positions[position(wm)]
	color := hexColor(wm.GetColor())
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

	fontName, text := "Helvetica", winAnsiText(wm.GetText())
	if embed {
		if err := UseEmbeddedFont(); err != nil {
			return nil, err
		}
		var err error
		if text, err = fontText(wm.GetText(), EmbeddedFont); err != nil {
			return nil, err
		}
		fontName = EmbeddedFont
	}
	size := int(math.Round(wm.GetFontSize()))
	desc := strings.Join(append([]string{
		"fontname:" + fontName,
		"points:" + strconv.Itoa(size),
		"scalefactor:1 abs",
		"fillcolor:" + color,
		"strokecolor:" + color,
	}, common...), ", ")
	mwm, err := pdfcpu.ParseTextWatermarkDetails(text, desc, true, types.POINTS)
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

// fontText prepares text for the pdfcpu user font fontName (installed):
// characters it has no glyph for would be left out (and measured as its
// .notdef glyph), controls and tabs would be drawn as .notdef (PDF/A
// 6.2.11.8): all become spaces. Newlines (and pdfcpu's backslash-n) break
// lines, as with winAnsiText.
func fontText(s, fontName string) (string, error) {
	ttf, ok, err := font.UserFont(fontName)
	if err != nil || !ok {
		return "", fmt.Errorf("pdfedit: watermark: font %s not installed (%v)", fontName, err)
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			continue
		case r == '\n':
		case unicode.IsControl(r):
			r = ' '
		default:
			if _, ok := ttf.Chars[uint32(r)]; !ok {
				r = ' '
			}
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

var cp1252 = map[rune]byte{
	'€': 0x80, '‚': 0x82, 'ƒ': 0x83, '„': 0x84, '…': 0x85, '†': 0x86, '‡': 0x87,
	'ˆ': 0x88, '‰': 0x89, 'Š': 0x8a, '‹': 0x8b, 'Œ': 0x8c, 'Ž': 0x8e,
	'‘': 0x91, '’': 0x92, '“': 0x93, '”': 0x94, '•': 0x95, '–': 0x96, '—': 0x97,
	'˜': 0x98, '™': 0x99, 'š': 0x9a, '›': 0x9b, 'œ': 0x9c, 'ž': 0x9e, 'Ÿ': 0x9f,
}
