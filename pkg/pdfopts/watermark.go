package pdfopts

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/proto/jobspb"
)

// The watermark's defaults (DESIGN §4.17).
const (
	DefaultWatermarkFontSize = 48
	DefaultWatermarkColor    = "#888888"
	DefaultWatermarkOpacity  = 0.3
	DefaultWatermarkRotation = 45
	DefaultWatermarkPosition = "center"
	DefaultWatermarkPages    = "all"
)

// The watermark's limits, as docs/api.md and the OpenAPI description give
// them to clients (with opacity between 0 and 1). The gateway applies them to a request (ParseWatermark)
// and the worker again to a job (CheckWatermark): one rulebook, so that a
// watermark the gateway accepted is never refused later by a rule of the
// worker's own. The image's bounds are limits.WatermarkImageBytes and
// limits.WatermarkImagePixels.
const (
	// WatermarkTextMax bounds the text, in characters (not bytes).
	WatermarkTextMax     = 500
	WatermarkFontSizeMin = 1   // points
	WatermarkFontSizeMax = 500 // points
	// WatermarkRotationMax bounds the rotation, in degrees either way.
	WatermarkRotationMax = 360
)

// watermarkPositions are DESIGN §4.17's positions, in the order the API
// lists them.
var watermarkPositions = [...]string{"center", "top-left", "top-center", "top-right",
	"left", "right", "bottom-left", "bottom-center", "bottom-right"}

// WatermarkPositions returns the positions a watermark may take.
func WatermarkPositions() []string { return watermarkPositions[:] }

var colorRe = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// RawWatermark is DESIGN §4.17's object.
type RawWatermark struct {
	Text     *string  `json:"text"`
	Image    *string  `json:"image"`
	FontSize *float64 `json:"fontSize"`
	Color    *string  `json:"color"`
	Opacity  *float64 `json:"opacity"`
	Rotation *float64 `json:"rotation"`
	Position *string  `json:"position"`
	Pages    *string  `json:"pages"`
}

// ParseWatermark validates a watermark object; null or absent gives nil.
// Position and pages are normalised (lower case, no spaces).
func ParseWatermark(raw json.RawMessage) (*jobspb.Watermark, error) {
	if isNull(raw) {
		return nil, nil
	}
	var r RawWatermark
	if raw[0] != '{' {
		return nil, invalid.Field("watermark", "must be an object")
	}
	if err := Decode(raw, &r); err != nil {
		return nil, err
	}
	w := &jobspb.Watermark{FontSize: DefaultWatermarkFontSize, Color: DefaultWatermarkColor, Opacity: DefaultWatermarkOpacity,
		Rotation: DefaultWatermarkRotation, Position: DefaultWatermarkPosition, Pages: DefaultWatermarkPages}
	switch {
	case r.Text != nil && r.Image != nil:
		return nil, invalid.Field("watermark", "give text or image, not both")
	case r.Text != nil:
		w.Text = *r.Text
	case r.Image != nil:
		img, err := decodeWatermarkImage(*r.Image)
		if err != nil {
			return nil, err
		}
		w.ImagePng = img
	default:
		return nil, invalid.Field("watermark", "needs text or image")
	}
	if r.FontSize != nil {
		w.FontSize = *r.FontSize
	}
	if r.Color != nil {
		w.Color = *r.Color
	}
	if r.Opacity != nil {
		w.Opacity = *r.Opacity
	}
	if r.Rotation != nil {
		w.Rotation = *r.Rotation
	}
	if r.Position != nil {
		w.Position = *r.Position
	}
	if r.Pages != nil {
		w.Pages = *r.Pages
	}
	if err := CheckWatermark(w); err != nil {
		return nil, err
	}
	// Normalised only once checked: "a ll" must not pass as "all".
	w.Position = strings.ToLower(strings.TrimSpace(w.Position))
	w.Pages = strings.ToLower(strings.ReplaceAll(w.Pages, " ", ""))
	return w, nil
}

// WatermarkWithDefaults returns w with the defaults in the fields left at
// zero where zero is meaningless (font size, colour, position, pages): a
// job cannot tell them from absent, and ParseWatermark never leaves them
// zero. Opacity 0 and rotation 0 are taken literally. It returns w itself
// when no field is zero, else a copy.
func WatermarkWithDefaults(w *jobspb.Watermark) *jobspb.Watermark {
	if w == nil || w.GetFontSize() != 0 && w.GetColor() != "" && w.GetPosition() != "" && w.GetPages() != "" {
		return w
	}
	w = proto.CloneOf(w)
	if w.FontSize == 0 {
		w.FontSize = DefaultWatermarkFontSize
	}
	if w.Color == "" {
		w.Color = DefaultWatermarkColor
	}
	if w.Position == "" {
		w.Position = DefaultWatermarkPosition
	}
	if w.Pages == "" {
		w.Pages = DefaultWatermarkPages
	}
	return w
}

// decodeWatermarkImage decodes the base64 text (or data URL) of an image,
// bounded before decoding; CheckWatermark checks the PNG itself.
func decodeWatermarkImage(b64 string) ([]byte, error) {
	if i := strings.Index(b64, ";base64,"); strings.HasPrefix(b64, "data:") && i > 0 {
		b64 = b64[i+len(";base64,"):]
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > limits.WatermarkImageBytes+2 {
		return nil, invalid.Field("watermark.image", fmt.Sprintf("must be a PNG of at most %d bytes", limits.WatermarkImageBytes))
	}
	img, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, invalid.Field("watermark.image", "must be a base64 PNG image")
	}
	return img, nil
}

// CheckWatermark applies DESIGN §4.17's rules to a watermark as it crosses
// the queue: ParseWatermark's result, or, in the worker, a job's. Every
// field is checked as it is: a zero font size, colour, position or pages is
// refused like any other value out of range (WatermarkWithDefaults first
// reads zero as the default). The image's header is read,
// not the image. Errors are *invalid.Error naming the field.
func CheckWatermark(w *jobspb.Watermark) error {
	text, img := w.GetText(), w.GetImagePng()
	switch {
	case text != "" && len(img) > 0:
		return invalid.Field("watermark", "give text or image, not both")
	case len(img) > 0:
		if err := checkWatermarkImage(img); err != nil {
			return err
		}
	case strings.TrimSpace(text) == "" || utf8.RuneCountInString(text) > WatermarkTextMax:
		return invalid.Field("watermark.text", fmt.Sprintf("must be 1 to %d characters, not only spaces", WatermarkTextMax))
	}
	// Written as !(in range) so that NaN, which no JSON carries but a job
	// could, is refused too.
	if fs := w.GetFontSize(); !(fs >= WatermarkFontSizeMin && fs <= WatermarkFontSizeMax) {
		return invalid.Field("watermark.fontSize", fmt.Sprintf("must be between %d and %d", WatermarkFontSizeMin, WatermarkFontSizeMax))
	}
	if !colorRe.MatchString(w.GetColor()) {
		return invalid.Field("watermark.color", "must be #rgb or #rrggbb")
	}
	if o := w.GetOpacity(); !(o >= 0 && o <= 1) {
		return invalid.Field("watermark.opacity", "must be between 0 and 1")
	}
	if r := w.GetRotation(); !(r >= -WatermarkRotationMax && r <= WatermarkRotationMax) {
		return invalid.Field("watermark.rotation", fmt.Sprintf("must be between -%d and %d", WatermarkRotationMax, WatermarkRotationMax))
	}
	if !isWatermarkPosition(w.GetPosition()) {
		return invalid.Field("watermark.position", "must be "+strings.Join(watermarkPositions[:len(watermarkPositions)-1], ", ")+
			" or "+watermarkPositions[len(watermarkPositions)-1])
	}
	if _, _, err := ParsePageRanges(w.GetPages()); err != nil {
		return invalid.Field("watermark.pages", "must be all or ranges like 1-3,5").Because(err)
	}
	return nil
}

// checkWatermarkImage bounds the PNG by its length and by the pixels its
// header declares (a few bytes may declare billions), without decoding it.
func checkWatermarkImage(img []byte) error {
	if len(img) > limits.WatermarkImageBytes {
		return invalid.Field("watermark.image", fmt.Sprintf("must be a PNG of at most %d bytes", limits.WatermarkImageBytes))
	}
	var tooLarge *limits.TooLargeError
	switch format, err := limits.Image(img, limits.WatermarkImagePixels); {
	case errors.As(err, &tooLarge):
		return invalid.Field("watermark.image", "is "+tooLarge.Error())
	case err != nil || format != "png":
		return invalid.Field("watermark.image", "must be a base64 PNG image").Because(err)
	}
	return nil
}

// isWatermarkPosition reports whether p names a position, in any case and
// with blanks around.
func isWatermarkPosition(p string) bool {
	p = strings.ToLower(strings.TrimSpace(p))
	for _, name := range watermarkPositions {
		if p == name {
			return true
		}
	}
	return false
}

// PageRange is one item of a page selection: pages First to Last, both
// included, as written (First may be the larger; page 0 and pages beyond a
// document select nothing).
type PageRange struct{ First, Last int }

// ParsePageRanges reads a page selection (DESIGN §4.17's pages): "all" (in
// any case) or a comma-separated list of pages and ranges such as "1-3,5",
// blanks around numbers ignored. all is true for "all"; an empty spec is an
// error. A number too large for an int reads as the largest int, a page
// beyond any document.
func ParsePageRanges(spec string) (ranges []PageRange, all bool, err error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	if s == "all" {
		return nil, true, nil
	}
	for _, item := range strings.Split(s, ",") {
		r, err := parseRange(item)
		if err != nil {
			return nil, false, fmt.Errorf("pages %q: %w", spec, err)
		}
		ranges = append(ranges, r)
	}
	return ranges, false, nil
}

// parseRange parses "N" or "N-M".
func parseRange(item string) (PageRange, error) {
	a, b, isRange := strings.Cut(item, "-")
	first, err := parsePageNr(strings.TrimSpace(a))
	if err != nil {
		return PageRange{}, err
	}
	if !isRange {
		return PageRange{first, first}, nil
	}
	last, err := parsePageNr(strings.TrimSpace(b))
	if err != nil {
		return PageRange{}, err
	}
	return PageRange{first, last}, nil
}

func parsePageNr(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty page number (want all or ranges like 1-3,5)")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad page number %q (want all or ranges like 1-3,5)", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		// All digits, so it only overflows: a page far beyond any document.
		return math.MaxInt, nil
	}
	return n, nil
}
