package pdfopts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

func TestPrintOptions(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		field string // "" means valid, "-" invalid as a whole
		check func(t *testing.T, o Options)
	}{
		{name: "split false", in: `{"split":false}`, check: func(t *testing.T, o Options) {
			if o.Print.Split != jobspb.Split_SPLIT_OFF {
				t.Fatalf("split %v", o.Print.Split)
			}
		}},
		{name: "split not a boolean", in: `{"split":"yes"}`, field: "split"},
		{name: "defaults", in: `{}`, check: func(t *testing.T, o Options) {
			p := o.Print
			if p.NoBackground || p.Untagged || p.Outline || p.Toc || p.Split != jobspb.Split_SPLIT_AUTO || p.MediaScreen || p.Scale != 0 || p.PageRanges != "" ||
				p.FailOnConsoleErrors || p.FailOnResourceErrors || p.FailOnAccessibilityErrors || o.Info != nil || o.Encryption != nil || o.Report {
				t.Fatalf("defaults: %+v", o.PrintOptions)
			}
		}},
		{name: "every field", in: `{"headerTemplate":"<span class=title></span>","footerTemplate":"<span class=pageNumber></span>",
			"waitForSelector":"#ready","waitForExpression":"window.done === true","waitDelay":"1.5s","emulatedMediaType":"Screen",
			"scale":0.5,"pageRanges":" 1 - 3 , 5","printBackground":false,"tagged":false,"outline":true,"toc":true,"split":true,
			"metadata":{"title":"T","author":"A","subject":"S","keywords":["k1","k2"],"creator":"C"},
			"encryption":{"ownerPassword":"own","userPassword":"usr","allowCopying":false},
			"failOnConsoleErrors":true,"failOnResourceErrors":true,"failOnAccessibilityErrors":true,"extraHttpHeaders":{"X-Token":"abc"},
			"cookies":[{"name":"sid","value":"1","domain":"example.com"}],"userAgent":"docrender-test","report":true}`,
			check: func(t *testing.T, o Options) {
				p := o.Print
				if p.HeaderTemplate == "" || p.FooterTemplate == "" || p.WaitForSelector != "#ready" || p.WaitForExpression == "" ||
					p.WaitDelayMs != 1500 || !p.MediaScreen || p.Scale != 0.5 || p.PageRanges != "1-3,5" || !p.NoBackground ||
					!p.Untagged || !p.Outline || !p.Toc || p.Split != jobspb.Split_SPLIT_ON || !p.FailOnConsoleErrors || !p.FailOnResourceErrors || !p.FailOnAccessibilityErrors || !o.Report {
					t.Fatalf("print %+v", p)
				}
				if i := o.Info; i.Title != "T" || i.Author != "A" || i.Subject != "S" || i.Creator != "C" || strings.Join(i.Keywords, ",") != "k1,k2" {
					t.Fatalf("info %+v", i)
				}
				if e := o.Encryption; e.OwnerPassword != "own" || e.UserPassword != "usr" || !e.AllowPrinting || e.AllowCopying || e.AllowModifying {
					t.Fatalf("encryption %+v", e)
				}
				if f := o.Fetch; f.ExtraHttpHeaders["X-Token"] != "abc" || len(f.Cookies) != 1 || f.Cookies[0].Domain != "example.com" || f.UserAgent != "docrender-test" {
					t.Fatalf("fetch %+v", f)
				}
			}},
		{name: "keywords as one string", in: `{"metadata":{"keywords":"a, b"}}`, check: func(t *testing.T, o Options) {
			if len(o.Info.Keywords) != 1 || o.Info.Keywords[0] != "a, b" {
				t.Fatalf("%+v", o.Info)
			}
		}},
		{name: "encryption defaults", in: `{"encryption":{"ownerPassword":"o"}}`, check: func(t *testing.T, o Options) {
			if e := o.Encryption; !e.AllowPrinting || !e.AllowCopying || e.AllowModifying || e.UserPassword != "" {
				t.Fatalf("%+v", e)
			}
		}},
		{name: "accessibility check on", in: `{"failOnAccessibilityErrors":true}`, check: func(t *testing.T, o Options) {
			if p := o.Print; !p.FailOnAccessibilityErrors || p.FailOnConsoleErrors || p.FailOnResourceErrors {
				t.Fatalf("%+v", p)
			}
		}},
		{name: "accessibility check off", in: `{"failOnAccessibilityErrors":false}`, check: func(t *testing.T, o Options) {
			if o.Print.FailOnAccessibilityErrors {
				t.Fatalf("%+v", o.Print)
			}
		}},
		{name: "accessibility check null", in: `{"failOnAccessibilityErrors":null}`, check: func(t *testing.T, o Options) {
			if o.Print.FailOnAccessibilityErrors {
				t.Fatalf("%+v", o.Print)
			}
		}},
		{name: "accessibility check not a bool", in: `{"failOnAccessibilityErrors":"yes"}`, field: "failOnAccessibilityErrors"},
		{name: "template too large", in: `{"footerTemplate":"` + strings.Repeat("x", MaxTemplateBytes+1) + `"}`, field: "footerTemplate"},
		{name: "empty selector", in: `{"waitForSelector":"  "}`, field: "waitForSelector"},
		{name: "bad delay", in: `{"waitDelay":"soon"}`, field: "waitDelay"},
		{name: "delay past the timeout", in: `{"waitDelay":"30s"}`, field: "waitDelay"},
		{name: "negative delay", in: `{"waitDelay":"-1s"}`, field: "waitDelay"},
		{name: "media", in: `{"emulatedMediaType":"tv"}`, field: "emulatedMediaType"},
		{name: "scale low", in: `{"scale":0.05}`, field: "scale"},
		{name: "scale high", in: `{"scale":2.5}`, field: "scale"},
		{name: "scale not a number", in: `{"scale":"big"}`, field: "scale"},
		{name: "ranges backwards", in: `{"pageRanges":"3-1"}`, field: "pageRanges"},
		{name: "ranges zero", in: `{"pageRanges":"0"}`, field: "pageRanges"},
		{name: "ranges words", in: `{"pageRanges":"first"}`, field: "pageRanges"},
		{name: "tagged not a bool", in: `{"tagged":"yes"}`, field: "tagged"},
		{name: "metadata not an object", in: `{"metadata":"x"}`, field: "metadata"},
		{name: "title too long", in: `{"metadata":{"title":"` + strings.Repeat("t", 1001) + `"}}`, field: "metadata.title"},
		{name: "keywords numbers", in: `{"metadata":{"keywords":[1]}}`, field: "metadata.keywords"},
		{name: "no owner password", in: `{"encryption":{"userPassword":"u"}}`, field: "encryption.ownerPassword"},
		{name: "same passwords", in: `{"encryption":{"userPassword":"p","ownerPassword":"p"}}`, field: "encryption.userPassword"},
		{name: "long password", in: `{"encryption":{"ownerPassword":"` + strings.Repeat("p", 128) + `"}}`, field: "encryption.ownerPassword"},
		{name: "host header", in: `{"extraHttpHeaders":{"Host":"evil"}}`, field: "extraHttpHeaders.Host"},
		{name: "proxy header", in: `{"extraHttpHeaders":{"proxy-authorization":"x"}}`, field: "extraHttpHeaders.proxy-authorization"},
		{name: "header injection", in: `{"extraHttpHeaders":{"X-A":"a\r\nX-B: b"}}`, field: "extraHttpHeaders.X-A"},
		{name: "bad header name", in: `{"extraHttpHeaders":{"a b":"c"}}`, field: "extraHttpHeaders"},
		{name: "cookie without name", in: `{"cookies":[{"value":"v"}]}`, field: "cookies[0].name"},
		{name: "cookie injection", in: `{"cookies":[{"name":"a","value":"b; admin=1"}]}`, field: "cookies[0]"},
		{name: "user agent lines", in: `{"userAgent":"a\nb"}`, field: "userAgent"},
		{name: "too much together", in: `{"headerTemplate":"` + strings.Repeat("h", MaxTemplateBytes) + `","footerTemplate":"` +
			strings.Repeat("f", MaxTemplateBytes) + `","extraHttpHeaders":{` + manyHeaders(30) + `}}`, field: "-"},
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
			if want := strings.TrimPrefix(tc.field, "-"); bad.Field != want {
				t.Fatalf("field %q (%v), want %q", bad.Field, bad, want)
			}
		})
	}
}

// A batch document's own fields replace the batch's options, the others stay.
func TestPrintOver(t *testing.T) {
	var base, doc PrintRaw
	if err := json.Unmarshal([]byte(`{"footerTemplate":"F","scale":0.5,"metadata":{"title":"batch"}}`), &base); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"scale":1.5,"metadata":{"title":"doc"}}`), &doc); err != nil {
		t.Fatal(err)
	}
	o, err := doc.Over(base).Validate(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if o.Print.FooterTemplate != "F" || o.Print.Scale != 1.5 || o.Info.Title != "doc" {
		t.Fatalf("%+v %+v", o.Print, o.Info)
	}
}

// A header or footer gets room in the margins unless the client set them.
func TestMakeRoom(t *testing.T) {
	for _, tc := range []struct {
		in          string
		top, bottom float64
	}{
		{`{}`, 1 / 2.54, 1 / 2.54},
		{`{"footerTemplate":"<span class=pageNumber></span>"}`, 1 / 2.54, marginBoxIn},
		{`{"headerTemplate":"h","footerTemplate":"f"}`, marginBoxIn, marginBoxIn},
		{`{"footerTemplate":"f","margin":"5mm"}`, 5 / 25.4, 5 / 25.4},
	} {
		o, err := ParseJSON(tc.in, "d", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if o.Page.MarginTopIn != tc.top || o.Page.MarginBottomIn != tc.bottom {
			t.Errorf("%s: top %g bottom %g, want %g %g", tc.in, o.Page.MarginTopIn, o.Page.MarginBottomIn, tc.top, tc.bottom)
		}
	}
}

// manyHeaders is n JSON members "X-H<i>": 8 KiB values.
func manyHeaders(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`"X-H%d":"%s"`, i, strings.Repeat("v", 8<<10)))
	}
	return strings.Join(parts, ",")
}
