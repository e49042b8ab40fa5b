// Package pdfopts parses and validates the generation options of spec 2.1
// (with DESIGN §4.1, §4.2, §4.14, §4.17) into a normalised form that crosses
// the queue as a proto message. The gateway validates with it; the worker
// reads the result, and checks a watermark again by the same rules
// (CheckWatermark).
package pdfopts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/docrender/docrender/pkg/filename"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Raw is the options object as the client sends it.
type Raw struct {
	FileName          *string         `json:"fileName"`
	Format            *string         `json:"format"`
	Orientation       *string         `json:"orientation"`
	Landscape         *bool           `json:"landscape"`
	Width             json.RawMessage `json:"width"`
	Height            json.RawMessage `json:"height"`
	Margin            json.RawMessage `json:"margin"`
	PreferCSSPageSize *bool           `json:"preferCSSPageSize"`
	Host              *bool           `json:"host"`
	DocumentID        *string         `json:"documentId"`
	AppointmentID     *string         `json:"appointmentId"`
	Regenerate        *bool           `json:"regenerate"`
	UserType          *string         `json:"userType"`
	Watermark         json.RawMessage `json:"watermark"`
	PrintRaw
}

// Options is the validated result.
type Options struct {
	FileName   string
	Page       *jobspb.Page
	Host       bool
	DocumentID string
	Regenerate bool
	// UserType is "guest" or "registered"; empty means absent (public).
	UserType  string
	Watermark *jobspb.Watermark
	PrintOptions
	// marginGiven: the client set the margins; else a header or footer
	// gets room (MakeRoom).
	marginGiven bool
}

// marginBoxIn is the top or bottom margin a header or footer gets when the
// client did not set the margins: room for a line or two of small text.
const marginBoxIn = 0.8

// MakeRoom widens default margins for a header (top) and footer (bottom).
// Margins the client set are kept as they are.
func (o *Options) MakeRoom(header, footer bool) {
	if o.marginGiven || o.Page == nil {
		return
	}
	if header {
		o.Page.MarginTopIn = max(o.Page.MarginTopIn, marginBoxIn)
	}
	if footer {
		o.Page.MarginBottomIn = max(o.Page.MarginBottomIn, marginBoxIn)
	}
}

// Public reports whether anyone with the ID may read the stored file (DESIGN §4.4).
func (o Options) Public() bool { return o.UserType != "registered" }

// Paper sizes in millimetres (ISO) or inches (US), portrait.
var formats = map[string][2]float64{
	"a4":      {210 / 25.4, 297 / 25.4},
	"a3":      {297 / 25.4, 420 / 25.4},
	"a5":      {148 / 25.4, 210 / 25.4},
	"letter":  {8.5, 11},
	"legal":   {8.5, 14},
	"tabloid": {11, 17},
}

const (
	defaultMarginIn = 1 / 2.54
	maxPageIn       = 200.0
)

// ParseJSON parses the options form field; empty means all defaults.
// renderTimeout bounds the waits (DESIGN §6).
func ParseJSON(s string, defaultName string, renderTimeout time.Duration) (Options, error) {
	var raw Raw
	if strings.TrimSpace(s) != "" {
		if err := Decode([]byte(s), &raw); err != nil {
			return Options{}, err
		}
	}
	return raw.Validate(defaultName, renderTimeout)
}

// Decode unmarshals JSON into v, turning type errors into 400s naming the field.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalid.Field(jsonPath(te.Field), "expected "+typeName(te.Type))
		}
		return invalid.Input("Invalid JSON: %v", err).WithHint("Send a JSON object.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid.Input("Invalid JSON: trailing data after the object")
	}
	return nil
}

// Validate checks every field and applies the defaults.
func (r Raw) Validate(defaultName string, renderTimeout time.Duration) (Options, error) {
	var o Options
	var err error
	if o.FileName, err = FileName(r.FileName, defaultName); err != nil {
		return o, err
	}
	if o.Page, err = r.page(); err != nil {
		return o, err
	}
	o.Host = r.Host != nil && *r.Host
	o.Regenerate = r.Regenerate != nil && *r.Regenerate
	if o.DocumentID, err = r.documentID(); err != nil {
		return o, err
	}
	if o.UserType, err = UserType(r.UserType); err != nil {
		return o, err
	}
	if o.Watermark, err = ParseWatermark(r.Watermark); err != nil {
		return o, err
	}
	if o.PrintOptions, err = r.PrintRaw.Validate(renderTimeout); err != nil {
		return o, err
	}
	if o.StepsOrdered {
		// The watermark is an option of generate's and the batch's, not of
		// PrintRaw's: given with stages, it must be in them.
		if o.Watermark != nil {
			return o, invalid.Field("watermark", "with stages, give every post-processing step in stages")
		}
		o.Watermark = o.StageWatermark
	}
	o.marginGiven = !isNull(r.Margin)
	o.MakeRoom(o.Print.HeaderTemplate != "", o.Print.FooterTemplate != "")
	return o, nil
}

// UserType validates who may read a stored result (DESIGN §4.4): "guest"
// (anyone with the link) or "registered" (the owner), in any case and with
// spaces around; nil is "" (the default, guest).
func UserType(p *string) (string, error) {
	if p == nil {
		return "", nil
	}
	switch ut := strings.ToLower(strings.TrimSpace(*p)); ut {
	case "guest", "registered":
		return ut, nil
	}
	return "", invalid.Field("userType", "must be guest or registered")
}

// unsafeName are the characters of paths and of names Windows refuses.
var unsafeName = regexp.MustCompile(`[/\\:*?"<>|]+`)

// FileName validates an output name (without extension) and applies the
// default. Characters that could disguise the name are dropped first
// (filename.Clean), path characters become "_".
func FileName(p *string, def string) (string, error) {
	if p == nil {
		return def, nil
	}
	n := strings.TrimSpace(filename.Clean(*p))
	n = strings.TrimSuffix(n, ".pdf")
	n = strings.TrimSuffix(n, ".PDF")
	n = strings.Trim(unsafeName.ReplaceAllString(n, "_"), ". ")
	if n == "" {
		return "", invalid.Field("fileName", "must not be empty")
	}
	if len(n) > 200 {
		return "", invalid.Field("fileName", "at most 200 characters")
	}
	return n, nil
}

func (r Raw) documentID() (string, error) {
	get := func(field string, p *string) (string, error) {
		if p == nil {
			return "", nil
		}
		v := strings.TrimSpace(*p)
		if v == "" || len(v) > 200 {
			return "", invalid.Field(field, "must be 1 to 200 characters")
		}
		return v, nil
	}
	d, err := get("documentId", r.DocumentID)
	if err != nil {
		return "", err
	}
	a, err := get("appointmentId", r.AppointmentID)
	if err != nil {
		return "", err
	}
	if d != "" && a != "" && d != a {
		return "", invalid.Field("documentId", "documentId and appointmentId differ; send one of them")
	}
	if d == "" {
		d = a
	}
	return d, nil
}

func (r Raw) page() (*jobspb.Page, error) {
	p := &jobspb.Page{}
	size := formats["a4"]
	if r.Format != nil {
		s, ok := formats[strings.ToLower(strings.TrimSpace(*r.Format))]
		if !ok {
			return nil, invalid.Field("format", "must be one of A4, Letter, Legal, Tabloid, A3, A5")
		}
		size = s
	}
	p.WidthIn, p.HeightIn = size[0], size[1]
	if r.Orientation != nil {
		switch strings.ToLower(strings.TrimSpace(*r.Orientation)) {
		case "portrait":
		case "landscape":
			p.Landscape = true
		default:
			return nil, invalid.Field("orientation", "must be portrait or landscape")
		}
	}
	if r.Landscape != nil {
		if r.Orientation != nil && *r.Landscape != p.Landscape {
			return nil, invalid.Field("landscape", "contradicts orientation")
		}
		p.Landscape = *r.Landscape
	}
	if w, set, err := lengthField("width", r.Width); err != nil {
		return nil, err
	} else if set {
		if w <= 0 || w > maxPageIn {
			return nil, invalid.Field("width", fmt.Sprintf("must be greater than 0 and at most %gin", maxPageIn))
		}
		p.WidthIn = w
	}
	if h, set, err := lengthField("height", r.Height); err != nil {
		return nil, err
	} else if set {
		if h <= 0 || h > maxPageIn {
			return nil, invalid.Field("height", fmt.Sprintf("must be greater than 0 and at most %gin", maxPageIn))
		}
		p.HeightIn = h
	}
	m := [4]float64{defaultMarginIn, defaultMarginIn, defaultMarginIn, defaultMarginIn}
	if err := margins(r.Margin, &m); err != nil {
		return nil, err
	}
	p.MarginTopIn, p.MarginRightIn, p.MarginBottomIn, p.MarginLeftIn = m[0], m[1], m[2], m[3]
	w, h := p.WidthIn, p.HeightIn
	if p.Landscape {
		w, h = h, w
	}
	if m[0]+m[2] >= h {
		return nil, invalid.Field("margin", "top and bottom margins leave no room on the page")
	}
	if m[1]+m[3] >= w {
		return nil, invalid.Field("margin", "left and right margins leave no room on the page")
	}
	p.PreferCssPageSize = r.PreferCSSPageSize != nil && *r.PreferCSSPageSize
	return p, nil
}

var marginSides = [4]string{"top", "right", "bottom", "left"}

func margins(raw json.RawMessage, m *[4]float64) error {
	if isNull(raw) {
		return nil
	}
	// A single length sets all four sides.
	if raw[0] != '{' {
		v, _, err := lengthField("margin", raw)
		if err != nil {
			return err
		}
		if v < 0 {
			return invalid.Field("margin", "must not be negative")
		}
		*m = [4]float64{v, v, v, v}
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return invalid.Field("margin", "must be an object with top, right, bottom, left")
	}
	for k := range obj {
		known := false
		for _, s := range marginSides {
			known = known || k == s
		}
		if !known {
			return invalid.Field("margin."+k, "unknown side; use top, right, bottom, left")
		}
	}
	for i, side := range marginSides {
		v, set, err := lengthField("margin."+side, obj[side])
		if err != nil {
			return err
		}
		if !set {
			continue
		}
		if v < 0 || v > maxPageIn {
			return invalid.Field("margin."+side, "must be between 0 and the page size")
		}
		m[i] = v
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

func lengthField(field string, raw json.RawMessage) (float64, bool, error) {
	if isNull(raw) {
		return 0, false, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false, invalid.Field(field, "must be a length such as 10cm")
		}
	} else {
		s = string(bytes.TrimSpace(raw))
	}
	v, err := ParseLength(s)
	if err != nil {
		return 0, false, invalid.Field(field, err.Error())
	}
	return v, true, nil
}

var lengthRe = regexp.MustCompile(`^([0-9]*\.?[0-9]+)\s*(px|in|cm|mm)?$`)

// ParseLength reads a CSS-like length in px, in, cm or mm (a bare number is
// pixels, 96 to the inch) and returns inches.
func ParseLength(s string) (float64, error) {
	m := lengthRe.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("%q is not a length; use a number with px, in, cm or mm", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a length", s)
	}
	switch m[2] {
	case "in":
		return v, nil
	case "cm":
		return v / 2.54, nil
	case "mm":
		return v / 25.4, nil
	default:
		return v / 96, nil
	}
}

// embeddedName says whether p names one of the unexported option structs
// embedded in others (pkg/pdfopts's, gateway/server's stepsOptions):
// never a JSON name.
func embeddedName(p string) bool {
	switch p {
	case "toolCommon", "pdfOut", "stepsOptions":
		return true
	}
	return false
}

// jsonPath is a decode error's field path without the Go names of embedded
// structs (PrintRaw.scale → scale, toolCommon.host → host): the client
// knows only the JSON names. Exported embedded types start upper case; the
// unexported ones are named here, since a JSON name may be camel case too.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && unicode.IsUpper(rune(p[0])) || embeddedName(p) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// typeName says a Go type as the JSON type a client would send.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int32, reflect.Int64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}
