package pdfopts

import (
	"encoding/base64"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/limits"
	"github.com/docrender/docrender/pkg/limits/limitstest"
)

func TestParseLength(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // inches
		ok   bool
	}{
		{"1in", 1, true},
		{"2.54cm", 1, true},
		{"25.4mm", 1, true},
		{"96px", 1, true},
		{"48", 0.5, true},
		{" 10 CM ", 10 / 2.54, true},
		{".5in", 0.5, true},
		{"", 0, false},
		{"1pt", 0, false},
		{"-1in", 0, false},
		{"1e3in", 0, false},
		{"in", 0, false},
		{"1.2.3mm", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseLength(tc.in)
		if (err == nil) != tc.ok || (tc.ok && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("ParseLength(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		field string // "" means valid
		check func(t *testing.T, o Options)
	}{
		{name: "defaults", in: "", check: func(t *testing.T, o Options) {
			if o.FileName != "document" || o.Page.Landscape || math.Abs(o.Page.WidthIn-210/25.4) > 1e-9 ||
				math.Abs(o.Page.MarginTopIn-1/2.54) > 1e-9 || o.Host || !o.Public() {
				t.Fatalf("defaults: %+v %+v", o, o.Page)
			}
		}},
		{name: "format is case-insensitive", in: `{"format":"letter"}`, check: func(t *testing.T, o Options) {
			if o.Page.WidthIn != 8.5 || o.Page.HeightIn != 11 {
				t.Fatalf("%+v", o.Page)
			}
		}},
		{name: "landscape alias agrees", in: `{"orientation":"landscape","landscape":true}`, check: func(t *testing.T, o Options) {
			if !o.Page.Landscape {
				t.Fatal("not landscape")
			}
		}},
		{name: "appointmentId is documentId", in: `{"appointmentId":"a-1"}`, check: func(t *testing.T, o Options) {
			if o.DocumentID != "a-1" {
				t.Fatalf("%q", o.DocumentID)
			}
		}},
		{name: "registered is private", in: `{"userType":"registered"}`, check: func(t *testing.T, o Options) {
			if o.Public() {
				t.Fatal("public")
			}
		}},
		{name: "file name sanitised", in: `{"fileName":"../a/b.pdf"}`, check: func(t *testing.T, o Options) {
			if strings.ContainsAny(o.FileName, "/\\") || strings.HasSuffix(o.FileName, ".pdf") {
				t.Fatalf("%q", o.FileName)
			}
		}},
		{name: "file name loses bidi and zero-width characters", in: `{"fileName":"inv\u200Boice\u202Efdp.exe\u2066 .pdf\u200B"}`, check: func(t *testing.T, o Options) {
			if o.FileName != "invoicefdp.exe" {
				t.Fatalf("%q", o.FileName)
			}
		}},
		{name: "file name of hidden characters only", in: `{"fileName":"\u202E\u200B\t"}`, field: "fileName"},
		{name: "watermark defaults", in: `{"watermark":{"text":"DRAFT"}}`, check: func(t *testing.T, o Options) {
			w := o.Watermark
			if w.Text != "DRAFT" || w.FontSize != 48 || w.Opacity != 0.3 || w.Rotation != 45 || w.Position != "center" || w.Pages != "all" {
				t.Fatalf("%+v", w)
			}
		}},
		{name: "watermark pages mixing all and ranges", in: `{"watermark":{"text":"x","position":" Top-Left ","pages":" 1 - 2 , ALL "}}`, field: "watermark.pages"},
		{name: "watermark position and pages normalised", in: `{"watermark":{"text":"x","position":" Top-Left ","pages":" 1 - 2 , 5 "}}`, check: func(t *testing.T, o Options) {
			if w := o.Watermark; w.Position != "top-left" || w.Pages != "1-2,5" {
				t.Fatalf("position %q, pages %q", w.Position, w.Pages)
			}
		}},
		{name: "watermark pages spaced into a word", in: `{"watermark":{"text":"x","pages":"a ll"}}`, field: "watermark.pages"},
		{name: "watermark text counted in characters", in: `{"watermark":{"text":"` + strings.Repeat("é", WatermarkTextMax) + `"}}`, check: func(t *testing.T, o Options) {}},
		{name: "watermark text too long", in: `{"watermark":{"text":"` + strings.Repeat("x", WatermarkTextMax+1) + `"}}`, field: "watermark.text"},
		{name: "watermark font size over", in: `{"watermark":{"text":"x","fontSize":501}}`, field: "watermark.fontSize"},
		{name: "watermark rotation over", in: `{"watermark":{"text":"x","rotation":361}}`, field: "watermark.rotation"},
		{name: "bad format", in: `{"format":"B5"}`, field: "format"},
		{name: "wrong type", in: `{"format":5}`, field: "format"},
		{name: "contradicting landscape", in: `{"orientation":"portrait","landscape":true}`, field: "landscape"},
		{name: "margins leave no room", in: `{"height":"2in","margin":{"top":"1in","bottom":"1in"}}`, field: "margin"},
		{name: "unknown margin side", in: `{"margin":{"middle":"1cm"}}`, field: "margin.middle"},
		{name: "both caching ids differ", in: `{"documentId":"a","appointmentId":"b"}`, field: "documentId"},
		{name: "watermark text and image", in: `{"watermark":{"text":"x","image":"iVBORw0KGgo="}}`, field: "watermark"},
		{name: "watermark pages", in: `{"watermark":{"text":"x","pages":"1-"}}`, field: "watermark.pages"},
		{name: "watermark image bomb", in: watermarkImage(limitstest.BombPNG(10_000_000, 10_000_000)), field: "watermark.image"},
		{name: "watermark image over the pixel bound", in: watermarkImage(limitstest.BombPNG(5000, 5000)), field: "watermark.image"},
		{name: "watermark image over the byte bound", in: watermarkImage(append(limitstest.BombPNG(8, 8), make([]byte, limits.WatermarkImageBytes)...)), field: "watermark.image"},
		{name: "watermark image a JPEG", in: watermarkImage(limitstest.BombJPEG(8, 8)), field: "watermark.image"},
		{name: "watermark image within bounds", in: watermarkImage(limitstest.BombPNG(4096, 4096)), check: func(t *testing.T, o Options) {
			if len(o.Watermark.ImagePng) == 0 {
				t.Fatal("no image")
			}
		}},
		{name: "not json", in: `{"format":`, field: "-"},
		{name: "trailing data", in: `{} {}`, field: "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseJSON(tc.in, "document", 30*time.Second)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, o)
				return
			}
			var bad *invalid.Error
			if !errors.As(err, &bad) {
				t.Fatalf("err = %v, want invalid input (a 400)", err)
			}
			if tc.field != "-" && !strings.Contains(bad.Error(), tc.field) {
				t.Fatalf("message %q does not name %s", bad.Error(), tc.field)
			}
		})
	}
}

// watermarkImage is an options object with img as the watermark image.
func watermarkImage(img []byte) string {
	return `{"watermark":{"image":"` + base64.StdEncoding.EncodeToString(img) + `"}}`
}

// FuzzParseJSON: any input yields options or a 400, never a panic or a 500.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{"", "{}", `{"format":"A4","margin":{"top":"1cm"}}`, `{"width":"3in","height":5}`,
		`{"watermark":{"text":"x","pages":"1-3,5"}}`, `{"margin":"2mm"}`, `[1]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseJSON(s, "document", 30*time.Second)
		if err != nil {
			var bad *invalid.Error
			if !errors.As(err, &bad) {
				t.Fatalf("ParseJSON(%q): %v is not invalid input (a 400)", s, err)
			}
			return
		}
		if o.Page == nil || o.Page.WidthIn <= 0 || o.Page.HeightIn <= 0 || o.FileName == "" {
			t.Fatalf("ParseJSON(%q) accepted unusable options %+v", s, o)
		}
	})
}
