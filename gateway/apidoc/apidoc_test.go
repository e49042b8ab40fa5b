package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi/datamodel"

	"github.com/docrender/docrender/pkg/pdfopts"
)

// TestDocumentIsValidOpenAPI31 holds the document, as written and as
// served, to the OpenAPI 3.1 specification: libopenapi-validator checks it
// against the 3.1 schema of the specification, and libopenapi builds its
// model with every $ref resolved.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	served, err := New("https://pdf.example.com")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string][]byte{"written": Raw(), "served": served.JSON} {
		t.Run(name, func(t *testing.T) {
			d, err := libopenapi.NewDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			if info := d.GetSpecInfo(); info.SpecFormat != datamodel.OAS31 || info.Version != "3.1.0" {
				t.Fatalf("read as %s %s, want OpenAPI 3.1.0", info.SpecFormat, info.Version)
			}
			if _, err := d.BuildV3Model(); err != nil {
				t.Fatalf("model: %v", err)
			}
			v, errs := validator.NewValidator(d)
			if len(errs) > 0 {
				t.Fatalf("validator: %v", errs)
			}
			if ok, verrs := v.ValidateDocument(); !ok {
				for _, e := range verrs {
					t.Errorf("%s: %s", e.Message, e.Reason)
					for _, se := range e.SchemaValidationErrors {
						t.Errorf("  at %s (%s): %s", se.FieldPath, se.KeywordLocation, se.Reason)
					}
				}
			}
		})
	}
}

// TestValidatorCatchesBrokenDocuments shows the validity test can fail:
// documents broken in ways a hand edit could break them are refused.
func TestValidatorCatchesBrokenDocuments(t *testing.T) {
	breaks := map[string][2]string{
		"3.0 style nullable is not 3.1": {`"openapi": "3.1.0"`, `"openapi": "3.1.0", "nullable": true`},
		"response without description":  {`"description": "The progress record.",`, ``},
		"parameter without in":          {`"name": "batchId", "in": "path",`, `"name": "batchId",`},
		"unknown security scheme type":  {`"type": "apiKey",` + "\n        \"in\": \"header\"", `"type": "key",` + "\n        \"in\": \"header\""},
	}
	for name, b := range breaks {
		t.Run(name, func(t *testing.T) {
			doc := Raw()
			if !bytes.Contains(doc, []byte(b[0])) {
				t.Fatalf("the document no longer has %q", b[0])
			}
			doc = bytes.Replace(doc, []byte(b[0]), []byte(b[1]), 1)
			d, err := libopenapi.NewDocument(doc)
			if err != nil {
				return
			}
			v, errs := validator.NewValidator(d)
			if len(errs) > 0 {
				return
			}
			if ok, _ := v.ValidateDocument(); ok {
				t.Fatal("the broken document passed")
			}
		})
	}
}

// TestSchemasAndExamples compiles every schema of the document as JSON
// Schema 2020-12 (OpenAPI 3.1's dialect) and checks every example the
// document gives against its schema: an example that drifts from its
// schema misleads the reader of /docs.
func TestSchemasAndExamples(t *testing.T) {
	docAny, err := jsonschema.UnmarshalJSON(bytes.NewReader(Raw()))
	if err != nil {
		t.Fatal(err)
	}
	const base = "file:///openapi.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(base, docAny); err != nil {
		t.Fatal(err)
	}
	root, err := parse(Raw())
	if err != nil {
		t.Fatal(err)
	}
	// Every schema the document has, by JSON pointer, with its examples.
	var schemas int
	walkSchemas(root, func(ptr string, s, example *node) {
		schemas++
		sch, err := c.Compile(base + "#" + ptr)
		if err != nil {
			t.Errorf("schema %s: %v", ptr, err)
			return
		}
		var examples []*node
		examples = append(examples, s.get("examples").itemsOrNil()...)
		if example != nil {
			examples = append(examples, example)
		}
		for _, ex := range examples {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(jsonText(ex)))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("example of %s does not fit its schema: %s\n%v", ptr, jsonText(ex), err)
			}
		}
	})
	if schemas < 60 {
		t.Fatalf("walked %d schemas; the walk misses some", schemas)
	}
}

// walkSchemas calls f for every component schema and every media type's
// schema (with the media type's example), by JSON pointer.
func walkSchemas(root *node, f func(ptr string, schema, example *node)) {
	root.get("components", "schemas").each(func(name string, s *node) {
		f("/components/schemas/"+pointerEscape(name), s, nil)
	})
	var media func(ptr string, n *node)
	media = func(ptr string, n *node) {
		n.each(func(k string, v *node) {
			p := ptr + "/" + pointerEscape(k)
			if k == "content" {
				v.each(func(mt string, c *node) {
					if c.has("schema") {
						f(p+"/"+pointerEscape(mt)+"/schema", c.get("schema"), c.get("example"))
					}
				})
				return
			}
			if v.fields != nil {
				media(p, v)
			}
		})
	}
	media("", root.get())
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func jsonText(n *node) string {
	var b strings.Builder
	n.writeJSON(&b)
	return b.String()
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestOperations checks what the specification's schema cannot: every
// path parameter is declared (and only those), operation IDs are unique,
// every operation has a tag the document lists, a summary and its answers.
func TestOperations(t *testing.T) {
	root, err := parse(Raw())
	if err != nil {
		t.Fatal(err)
	}
	deref := reference{root: root}.deref
	tags := root.get("tags")
	var tagNames []string
	tags.eachItem(func(n *node) { tagNames = append(tagNames, n.str("name")) })
	ids := map[string]string{}
	root.get("paths").each(func(path string, item *node) {
		var want []string
		for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
			want = append(want, m[1])
		}
		slices.Sort(want)
		for _, method := range methods {
			op := item.get(method)
			if op == nil {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			var got []string
			for _, p := range op.get("parameters").itemsOrNil() {
				p, _ = deref(p)
				if p.str("in") == "path" {
					got = append(got, p.str("name"))
					if p.get("required").scalar() != true {
						t.Errorf("%s: path parameter %s not required", where, p.str("name"))
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: path parameters %v, want %v", where, got, want)
			}
			id := op.str("operationId")
			if other, dup := ids[id]; dup || id == "" {
				t.Errorf("%s: operationId %q empty or also on %s", where, id, other)
			}
			ids[id] = where
			if op.str("summary") == "" || !op.has("security") || !op.has("responses") {
				t.Errorf("%s: needs a summary, security and responses", where)
			}
			if tg := op.get("tags").strings(); len(tg) != 1 || !slices.Contains(tagNames, tg[0]) {
				t.Errorf("%s: tags %v, want one of %v", where, tg, tagNames)
			}
		}
	})
}

// TestServedDocumentNamesItsServer: the served document's server is the
// configured base address, and nothing else of it changes.
func TestServedDocumentNamesItsServer(t *testing.T) {
	const base = "https://pdf.example.com"
	d, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	var served, written map[string]any
	if err := json.Unmarshal(d.JSON, &served); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(Raw(), &written); err != nil {
		t.Fatal(err)
	}
	servers, _ := served["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != base {
		t.Fatalf("servers %v, want %s", served["servers"], base)
	}
	delete(served, "servers")
	delete(written, "servers")
	if fmt.Sprint(served) != fmt.Sprint(written) {
		t.Fatal("serving changed more than the servers")
	}
}

// TestReference: the page names every operation and every schema of the
// document, shows the base address, and loads nothing from anywhere.
func TestReference(t *testing.T) {
	const base = "https://pdf.example.com"
	d, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	page := string(d.HTML)
	root, _ := parse(Raw())
	root.get("paths").each(func(path string, item *node) {
		for _, m := range methods {
			if op := item.get(m); op != nil {
				want := fmt.Sprintf(`<span class="method %s">%s</span><span class="path">%s</span>`, strings.ToUpper(m), strings.ToUpper(m), path)
				if !strings.Contains(page, want) {
					t.Errorf("the page lacks %s %s", strings.ToUpper(m), path)
				}
				if !strings.Contains(page, `id="op-`+op.str("operationId")+`"`) {
					t.Errorf("no anchor for %s", op.str("operationId"))
				}
			}
		}
	})
	root.get("components", "schemas").each(func(name string, _ *node) {
		if !strings.Contains(page, `id="schema-`+name+`"`) {
			t.Errorf("the page lacks schema %s", name)
		}
	})
	// Every link inside the page has its target.
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("link to #%s has no target", m[1])
		}
	}
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "@import", "src=", "url("} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("the page contains %q: it must load nothing", bad)
		}
	}
	for _, want := range []string{base, "X-API-Key", "docrender_session", "RENDER_CHECK_FAILED", "headerTemplate", "failOnResourceErrors", "text/event-stream", "Exactly one of: <code>files</code>, <code>url</code>."} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not mention %s", want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain <b>", "<p>plain &lt;b&gt;</p>"},
		{"a `x<y` and **b**", "<p>a <code>x&lt;y</code> and <strong>b</strong></p>"},
		{"one\ntwo\n\nthree", "<p>one two</p><p>three</p>"},
		{"- a\n- `b`", "<ul><li>a</li><li><code>b</code></li></ul>"},
		{"| h | i |\n|---|---|\n| `1` | 2 |", "<table><tr><th>h</th><th>i</th></tr><tr><td><code>1</code></td><td>2</td></tr></table>"},
		{"`<script>` **<i>**", "<p><code>&lt;script&gt;</code> <strong>&lt;i&gt;</strong></p>"},
	}
	for _, tt := range tests {
		if got := string(markdown(tt.in)); got != tt.want {
			t.Errorf("markdown(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWatermarkLimitsArePdfopts holds the document's watermark limits to the
// ones the gateway and the worker apply (pdfopts).
func TestWatermarkLimitsArePdfopts(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Watermark struct {
					Properties map[string]struct {
						Minimum   *float64 `json:"minimum"`
						Maximum   *float64 `json:"maximum"`
						MaxLength *int     `json:"maxLength"`
						Default   any      `json:"default"`
						Enum      []string `json:"enum"`
					} `json:"properties"`
				} `json:"Watermark"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Components.Schemas.Watermark.Properties
	got := fmt.Sprint(*p["text"].MaxLength, *p["fontSize"].Minimum, *p["fontSize"].Maximum, p["fontSize"].Default,
		*p["opacity"].Minimum, *p["opacity"].Maximum, p["opacity"].Default,
		*p["rotation"].Minimum, *p["rotation"].Maximum, p["rotation"].Default,
		p["color"].Default, p["position"].Enum, p["position"].Default, p["pages"].Default)
	want := fmt.Sprint(pdfopts.WatermarkTextMax, pdfopts.WatermarkFontSizeMin, pdfopts.WatermarkFontSizeMax, pdfopts.DefaultWatermarkFontSize,
		0, 1, pdfopts.DefaultWatermarkOpacity,
		-pdfopts.WatermarkRotationMax, pdfopts.WatermarkRotationMax, pdfopts.DefaultWatermarkRotation,
		pdfopts.DefaultWatermarkColor, pdfopts.WatermarkPositions(), pdfopts.DefaultWatermarkPosition, pdfopts.DefaultWatermarkPages)
	if got != want {
		t.Errorf("openapi.json's Watermark: %s\npdfopts:                   %s", got, want)
	}
}

// TestRecordOptionsArePdfopts holds the document's DESIGN §8 options to
// the gateway's parsing (pdfopts): every enum value the document lists is
// accepted, a value it does not list is refused, and the limits agree.
func TestRecordOptionsArePdfopts(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum     []string `json:"enum"`
					MaxItems *int     `json:"maxItems"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	rec := doc.Components.Schemas["RecordOptions"].Properties
	try := func(js string) error {
		var r pdfopts.RecordRaw
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		_, err := r.Validate()
		return err
	}
	check := func(field string, enum []string, js func(string) string, bad string) {
		if len(enum) == 0 {
			t.Errorf("%s: the document lists no values", field)
		}
		for _, v := range enum {
			if err := try(js(v)); err != nil {
				t.Errorf("%s %q, listed by the document, is refused: %v", field, v, err)
			}
		}
		if try(js(bad)) == nil {
			t.Errorf("%s %q, not listed, is accepted", field, bad)
		}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	check("pdfa", rec["pdfa"].Enum, func(v string) string { return `{"pdfa":` + q(v) + `}` }, "1b")
	check("attachmentRelationship", rec["attachmentRelationship"].Enum, func(v string) string { return `{"attachmentRelationship":` + q(v) + `}` }, "Parent")
	check("einvoice.profile", doc.Components.Schemas["EInvoice"].Properties["profile"].Enum,
		func(v string) string { return `{"einvoice":{"profile":` + q(v) + `}}` }, "COMFORT")
	check("sign.level", doc.Components.Schemas["Signature"].Properties["level"].Enum,
		func(v string) string { return `{"sign":{"identity":"acme","level":` + q(v) + `}}` }, "B-LTA")
	if m := rec["attachments"].MaxItems; m == nil || *m != pdfopts.MaxAttachments {
		t.Errorf("attachments maxItems %v, pdfopts %d", m, pdfopts.MaxAttachments)
	}
}
