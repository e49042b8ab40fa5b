// Package qr renders QR codes as PNG images for POST /pdf/qrcode (spec §4.6)
// and for the inline <img data-qr="..."> attributes (DESIGN §4.15-4.16).
//
// Both entry points share one set of options, defaults and limits:
//
//	field (JSON)          attribute        default   limit
//	data                  data-qr          none      required, non-empty, fits a QR code
//	size                  data-qr-size     200       32..2048 pixels (the PNG is size×size)
//	margin                data-qr-margin   1         0..10 modules of quiet zone, inside size
//	errorCorrectionLevel  data-qr-ecc      M         L, M, Q or H (case-insensitive)
//	darkColor             data-qr-dark     #000000   #rgb or #rrggbb
//	lightColor            data-qr-light    #ffffff   #rgb or #rrggbb
//	format                (none)           png       png or dataUrl (case-insensitive)
//
// Every invalid input is an *invalid.Error naming the field.
//
// The matrix comes from github.com/yeqown/go-qrcode/v2; the PNG is written by
// this package's own lean writer (png.go), not the library's image writer.
package qr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/docrender/docrender/pkg/invalid"
)

// Defaults and limits (spec §4.6, DESIGN §4.16).
const (
	DefaultSize   = 200
	DefaultMargin = 1
	DefaultECC    = "M"
	DefaultDark   = "#000000"
	DefaultLight  = "#ffffff"

	MinSize   = 32
	MaxSize   = 2048
	MinMargin = 0
	MaxMargin = 10
)

// Response formats of POST /pdf/qrcode.
const (
	FormatPNG     = "png"     // the PNG bytes, Content-Type image/png
	FormatDataURL = "dataUrl" // JSON {"dataUrl": "data:image/png;base64,..."}
)

// Options says what to draw. Use NewOptions for the defaults: the zero value
// is not valid (Size 0 and ECC "" are rejected; Margin 0 is a valid margin).
type Options struct {
	Data   string // text to encode, as UTF-8 bytes; required, non-empty
	Size   int    // width and height of the PNG in pixels, MinSize..MaxSize
	Margin int    // quiet zone in modules on each side, inside Size, MinMargin..MaxMargin
	ECC    string // error correction level L, M, Q or H (case-insensitive)
	Dark   string // colour of dark modules, #rgb or #rrggbb
	Light  string // colour of light modules and the quiet zone, #rgb or #rrggbb
}

// NewOptions returns the options of spec §4.6 with their defaults for data.
func NewOptions(data string) Options {
	return Options{Data: data, Size: DefaultSize, Margin: DefaultMargin, ECC: DefaultECC,
		Dark: DefaultDark, Light: DefaultLight}
}

// Request is the JSON body of POST /pdf/qrcode (spec §4.6), for clients and
// tests to marshal. Nil / empty fields take their defaults. ParseRequest does
// not unmarshal into it: it decodes field by field so that a wrong type is
// reported against the field that has it.
type Request struct {
	Data                 string   `json:"data"`
	Size                 *float64 `json:"size,omitempty"`   // JSON number, must be an integer
	Margin               *float64 `json:"margin,omitempty"` // JSON number, must be an integer
	ErrorCorrectionLevel string   `json:"errorCorrectionLevel,omitempty"`
	DarkColor            string   `json:"darkColor,omitempty"`
	LightColor           string   `json:"lightColor,omitempty"`
	Format               string   `json:"format,omitempty"`
}

// fieldNames are the names errors give to the fields: the JSON names for the
// API, the attribute names for data-qr.
type fieldNames struct {
	data, size, margin, ecc, dark, light string
}

var (
	apiFields  = fieldNames{"data", "size", "margin", "errorCorrectionLevel", "darkColor", "lightColor"}
	attrFields = fieldNames{"data-qr", "data-qr-size", "data-qr-margin", "data-qr-ecc", "data-qr-dark", "data-qr-light"}
)

// ParseRequest decodes and validates a POST /pdf/qrcode body. format is
// FormatPNG or FormatDataURL. Every error is an *invalid.Error; those about
// one field name it.
//
// JSON null counts as absent. size and margin must be JSON numbers with an
// integral value (200 and 200.0 are accepted, 200.5 and "200" are not).
// Unknown fields are ignored. Field names are matched exactly.
func ParseRequest(body []byte) (o Options, format string, err error) {
	var raw map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) == 0 {
		return Options{}, "", invalid.Input("The request body must be a JSON object with a data field.")
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Options{}, "", invalid.Input("The request body must be a JSON object.")
		}
		return Options{}, "", invalid.Input("The request body is not valid JSON.").Because(err)
	}
	if raw == nil { // the body was null
		return Options{}, "", invalid.Input("The request body must be a JSON object.")
	}

	o = NewOptions("")
	format = FormatPNG

	present := func(k string) (json.RawMessage, bool) {
		v, ok := raw[k]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			return nil, false
		}
		return v, true
	}
	str := func(k string, dst *string) error {
		v, ok := present(k)
		if !ok {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return invalid.Field(k, "must be a string")
		}
		return nil
	}
	integer := func(k string, dst *int) error {
		v, ok := present(k)
		if !ok {
			return nil
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return invalid.Field(k, "must be a number")
		}
		if f != math.Trunc(f) {
			return invalid.Field(k, "must be an integer")
		}
		if math.Abs(f) > 1<<30 {
			return invalid.Field(k, "is out of range")
		}
		*dst = int(f)
		return nil
	}

	v, ok := present("data")
	if !ok {
		return Options{}, "", invalid.Field("data", "is required")
	}
	if err := json.Unmarshal(v, &o.Data); err != nil {
		return Options{}, "", invalid.Field("data", "must be a string")
	}
	for _, e := range []error{
		integer("size", &o.Size),
		integer("margin", &o.Margin),
		str("errorCorrectionLevel", &o.ECC),
		str("darkColor", &o.Dark),
		str("lightColor", &o.Light),
		str("format", &format),
	} {
		if e != nil {
			return Options{}, "", e
		}
	}
	// An empty string takes the default, as an absent field does.
	if o.ECC == "" {
		o.ECC = DefaultECC
	}
	if o.Dark == "" {
		o.Dark = DefaultDark
	}
	if o.Light == "" {
		o.Light = DefaultLight
	}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "png":
		format = FormatPNG
	case "dataurl":
		format = FormatDataURL
	default:
		return Options{}, "", invalid.Field("format", fmt.Sprintf("%q is not one of png, dataUrl", format))
	}
	if err := o.validate(&apiFields); err != nil {
		return Options{}, "", err
	}
	return o, format, nil
}

// FromAttrs builds the options of an <img data-qr="data"> element. attrs
// holds the values of its data-qr-* attributes by suffix: "size", "margin",
// "ecc", "dark", "light"; other keys are ignored. An absent or blank value
// takes the default. Errors are *invalid.Error naming the attribute
// (e.g. "data-qr-size"). data is encoded as given (not trimmed).
func FromAttrs(data string, attrs map[string]string) (Options, error) {
	o := NewOptions(data)
	get := func(k string) (string, bool) {
		v := strings.TrimSpace(attrs[k])
		return v, v != ""
	}
	atoi := func(k, field string, dst *int) error {
		v, ok := get(k)
		if !ok {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return invalid.Field(field, fmt.Sprintf("%q is not an integer", v))
		}
		*dst = n
		return nil
	}
	if err := atoi("size", attrFields.size, &o.Size); err != nil {
		return Options{}, err
	}
	if err := atoi("margin", attrFields.margin, &o.Margin); err != nil {
		return Options{}, err
	}
	if v, ok := get("ecc"); ok {
		o.ECC = v
	}
	if v, ok := get("dark"); ok {
		o.Dark = v
	}
	if v, ok := get("light"); ok {
		o.Light = v
	}
	if err := o.validate(&attrFields); err != nil {
		return Options{}, err
	}
	return o, nil
}

// Validate checks o against the limits of the package comment, naming the
// API's JSON fields in its errors (*invalid.Error). Besides the field
// limits it rejects data longer than a QR code holds at the chosen level
// (field data), and a size below one pixel per module for the code that data
// needs plus its margin (field size; see plan). It normalises ECC to upper
// case and the colours to lower-case #rrggbb.
func (o *Options) Validate() error { return o.validate(&apiFields) }

func (o *Options) validate(f *fieldNames) error {
	p, err := o.plan(f)
	if err != nil {
		return err
	}
	o.ECC = string("LMQH"[p.level])
	o.Dark = hexColour(p.dark)
	o.Light = hexColour(p.light)
	return nil
}

// Encoding modes in the column order of capacities.
const (
	modeNumeric = iota
	modeAlnum
	modeByte
)

var modeNames = [3]string{"numeric", "alphanumeric", "byte"}

// layout is everything the encoder needs, derived from valid Options.
type layout struct {
	level       int // 0..3 = L, M, Q, H
	mode        int // modeNumeric, modeAlnum or modeByte
	version     int // 1..40
	modules     int // modules per side of the code, without margin: 17+4*version
	dark, light [3]byte
}

// plan validates o and works out the code's version and mode without
// building the matrix.
//
// Size policy: the image is exactly Size×Size pixels and every module,
// including the Margin modules of quiet zone on each side, gets at least one
// whole pixel, so Size must be at least modules+2*Margin. A smaller size
// would drop rows and columns of modules and give an undecodable picture,
// so it is a 400 on size (the message gives the minimum). Above that,
// modules are Size/(modules+2*Margin) pixels wide on average; see png.go.
func (o *Options) plan(f *fieldNames) (layout, error) {
	var p layout
	if o.Data == "" {
		return p, invalid.Field(f.data, "is required and must not be empty")
	}
	if o.Size < MinSize || o.Size > MaxSize {
		return p, invalid.Field(f.size, fmt.Sprintf("%d is not between %d and %d pixels", o.Size, MinSize, MaxSize))
	}
	if o.Margin < MinMargin || o.Margin > MaxMargin {
		return p, invalid.Field(f.margin, fmt.Sprintf("%d is not between %d and %d modules", o.Margin, MinMargin, MaxMargin))
	}
	switch strings.ToUpper(strings.TrimSpace(o.ECC)) {
	case "L":
		p.level = 0
	case "M":
		p.level = 1
	case "Q":
		p.level = 2
	case "H":
		p.level = 3
	default:
		return p, invalid.Field(f.ecc, fmt.Sprintf("%q is not one of L, M, Q, H", o.ECC))
	}
	var ok bool
	if p.dark, ok = parseColour(o.Dark); !ok {
		return p, invalid.Field(f.dark, fmt.Sprintf("%q is not a #rgb or #rrggbb colour", o.Dark))
	}
	if p.light, ok = parseColour(o.Light); !ok {
		return p, invalid.Field(f.light, fmt.Sprintf("%q is not a #rgb or #rrggbb colour", o.Light))
	}

	p.mode = dataMode(o.Data)
	n := len(o.Data)
	for v := 1; v <= 40; v++ {
		if int(capacities[v-1][p.level][p.mode]) >= n {
			p.version = v
			break
		}
	}
	if p.version == 0 {
		max := capacities[39][p.level][p.mode]
		unit := "bytes of UTF-8"
		if p.mode != modeByte {
			unit = "characters"
		}
		return p, invalid.Field(f.data, fmt.Sprintf(
			"too long for a QR code at error correction level %c: %d %s, at most %d in %s mode",
			"LMQH"[p.level], n, unit, max, modeNames[p.mode])).
			WithHint("Shorten the data or choose a lower errorCorrectionLevel.")
	}
	p.modules = 17 + 4*p.version
	if need := p.modules + 2*o.Margin; o.Size < need {
		return p, invalid.Field(f.size, fmt.Sprintf(
			"%d pixels is too small for this code: %d modules plus a margin of %d on each side need at least %d pixels",
			o.Size, p.modules, o.Margin, need)).
			WithHint("Increase the size, reduce the margin, or shorten the data.")
	}
	return p, nil
}

// dataMode is the densest single mode that encodes all of data, decided as
// the library's automatic analysis does (numeric, then alphanumeric, else
// byte); plan passes it to the library explicitly so both agree.
func dataMode(data string) int {
	mode := modeNumeric
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c >= '0' && c <= '9' {
			continue
		}
		if (c >= 'A' && c <= 'Z') || strings.IndexByte(" $%*+-./:", c) >= 0 {
			mode = modeAlnum
			continue
		}
		return modeByte
	}
	return mode
}

// parseColour parses #rgb or #rrggbb (hex digits in either case).
func parseColour(s string) (c [3]byte, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) == 0 || s[0] != '#' {
		return c, false
	}
	h := s[1:]
	switch len(h) {
	case 3:
		for i := 0; i < 3; i++ {
			v, ok := unhex(h[i])
			if !ok {
				return c, false
			}
			c[i] = v<<4 | v
		}
	case 6:
		for i := 0; i < 3; i++ {
			hi, ok1 := unhex(h[2*i])
			lo, ok2 := unhex(h[2*i+1])
			if !ok1 || !ok2 {
				return c, false
			}
			c[i] = hi<<4 | lo
		}
	default:
		return c, false
	}
	return c, true
}

func unhex(b byte) (byte, bool) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', true
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10, true
	case b >= 'A' && b <= 'F':
		return b - 'A' + 10, true
	}
	return 0, false
}

func hexColour(c [3]byte) string {
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}
