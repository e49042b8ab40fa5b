package apidoc

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"strings"
)

// The reference page (GET /docs) is rendered here, in Go, from the
// document: no script, nothing fetched from elsewhere, and nothing to keep
// in step by hand, since every path, field and answer it shows is read
// from openapi.json.

//go:embed reference.html
var referenceHTML string

// methods are the operations of a path item, in the order a reader expects.
var methods = []string{"get", "head", "post", "put", "patch", "delete", "options", "trace"}

// maxDepth bounds how deep nested inline objects are spelled out.
const maxDepth = 4

type view struct {
	Title, Version, Summary string
	Description             template.HTML
	BaseURL                 string
	Auth                    []authView
	Groups                  []groupView
	Answers                 []responseView
	Schemas                 []schemaView
}

type authView struct {
	Name, Kind  string
	Description template.HTML
}

type groupView struct {
	Name, Anchor string
	Description  template.HTML
	Ops          []opView
}

type opView struct {
	Anchor, Method, Path, Summary string
	Description                   template.HTML
	// Auth lists the ways to call it; "none" means no credentials.
	Auth      []template.HTML
	Params    []fieldView
	Bodies    []contentView
	Responses []responseView
}

type contentView struct {
	MediaType string
	Type      template.HTML
	Fields    []fieldView
	Notes     []template.HTML
}

type responseView struct {
	// Status is the status code, or the name of a shared answer in the
	// common answers section.
	Status      string
	Description template.HTML
	Headers     []headerView
	Contents    []contentView
	// Ref names the shared answer (components/responses) this one is,
	// shown in full once in the common answers; Summary is its gist.
	Ref     string
	Summary template.HTML
}

type headerView struct {
	Name        string
	Description string
}

type fieldView struct {
	Name        string
	Depth       int
	Type        template.HTML
	Required    bool
	Description template.HTML
	Facts       string
}

type schemaView struct {
	Name, Anchor string
	Description  template.HTML
	Type         template.HTML
	Includes     []template.HTML
	Fields       []fieldView
	Notes        []template.HTML
}

// reference turns the parsed document into the page's view.
type reference struct {
	root *node
}

// render builds the HTML reference of doc.
func render(doc []byte) ([]byte, error) {
	root, err := parse(doc)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("reference").Parse(referenceHTML)
	if err != nil {
		return nil, fmt.Errorf("apidoc: template: %w", err)
	}
	r := reference{root: root}
	v := view{
		Title:       root.str("info", "title"),
		Version:     root.str("info", "version"),
		Summary:     root.str("info", "summary"),
		Description: markdown(root.str("info", "description")),
		BaseURL:     firstServer(root),
		Auth:        r.auth(),
		Groups:      r.groups(),
		Answers:     r.answers(),
		Schemas:     r.schemas(),
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("apidoc: render: %w", err)
	}
	return b.Bytes(), nil
}

func firstServer(root *node) string {
	if s := root.get("servers"); s != nil && len(s.items) > 0 {
		return s.items[0].str("url")
	}
	return ""
}

func (r reference) auth() []authView {
	var out []authView
	r.root.get("components", "securitySchemes").each(func(name string, s *node) {
		kind := s.str("type")
		switch kind {
		case "apiKey":
			kind = fmt.Sprintf("%s %s", s.str("in"), s.str("name"))
		case "http":
			kind = "Authorization: " + strings.ToUpper(s.str("scheme")[:1]) + s.str("scheme")[1:]
			if f := s.str("bearerFormat"); f != "" {
				kind += " (" + f + ")"
			}
		}
		out = append(out, authView{Name: name, Kind: kind, Description: markdown(s.str("description"))})
	})
	return out
}

func (r reference) groups() []groupView {
	var groups []groupView
	index := map[string]int{}
	r.root.get("tags").eachItem(func(t *node) {
		index[t.str("name")] = len(groups)
		groups = append(groups, groupView{Name: t.str("name"), Anchor: "tag-" + anchor(t.str("name")), Description: markdown(t.str("description"))})
	})
	r.root.get("paths").each(func(path string, item *node) {
		for _, m := range methods {
			op := item.get(m)
			if op == nil {
				continue
			}
			tag := "Other"
			if tags := op.get("tags").strings(); len(tags) > 0 {
				tag = tags[0]
			}
			i, ok := index[tag]
			if !ok {
				i = len(groups)
				index[tag] = i
				groups = append(groups, groupView{Name: tag, Anchor: "tag-" + anchor(tag)})
			}
			groups[i].Ops = append(groups[i].Ops, r.operation(path, m, item, op))
		}
	})
	return groups
}

func (r reference) operation(path, method string, item, op *node) opView {
	id := op.str("operationId")
	if id == "" {
		id = method + path
	}
	v := opView{
		Anchor: "op-" + anchor(id), Method: strings.ToUpper(method), Path: path,
		Summary: op.str("summary"), Description: markdown(op.str("description")),
		Auth: r.security(op),
	}
	params := append(append([]*node{}, item.get("parameters").itemsOrNil()...), op.get("parameters").itemsOrNil()...)
	for _, p := range params {
		p, _ = r.deref(p)
		v.Params = append(v.Params, fieldView{
			Name: p.str("name") + " (" + p.str("in") + ")", Type: r.typeOf(p.get("schema")),
			Required: p.get("required").scalar() == true, Description: markdownInline(p.str("description")),
			Facts: facts(p.get("schema")),
		})
	}
	op.get("requestBody", "content").each(func(mt string, c *node) {
		schema := c.get("schema")
		cv := contentView{MediaType: mt, Type: r.typeOf(schema)}
		target, _ := r.deref(schema)
		cv.Fields, cv.Notes = r.fields(target, "", 0)
		v.Bodies = append(v.Bodies, cv)
	})
	op.get("responses").each(func(status string, resp *node) {
		if target, name := r.deref(resp); name != "" {
			// A shared answer: its gist here, the whole once below.
			v.Responses = append(v.Responses, responseView{Status: status, Ref: name,
				Summary: markdownInline(gist(target.str("description")))})
			return
		}
		v.Responses = append(v.Responses, r.response(status, resp))
	})
	return v
}

// response spells out one answer: its description, headers and contents.
func (r reference) response(status string, resp *node) responseView {
	rv := responseView{Status: status, Description: markdown(resp.str("description"))}
	resp.get("headers").each(func(name string, h *node) {
		h, _ = r.deref(h)
		rv.Headers = append(rv.Headers, headerView{Name: name, Description: h.str("description")})
	})
	resp.get("content").each(func(mt string, c *node) {
		schema := c.get("schema")
		cv := contentView{MediaType: mt, Type: r.typeOf(schema)}
		if !schema.has("$ref") {
			cv.Fields, cv.Notes = r.fields(schema, "", 0)
		}
		rv.Contents = append(rv.Contents, cv)
	})
	return rv
}

// answers are the shared answers (components/responses), each in full.
func (r reference) answers() []responseView {
	var out []responseView
	r.root.get("components", "responses").each(func(name string, resp *node) {
		out = append(out, r.response(name, resp))
	})
	return out
}

// gist is a description's first clause: up to its first colon or full stop.
func gist(s string) string {
	end := len(s)
	for _, sep := range []string{": ", ". "} {
		if i := strings.Index(s, sep); i >= 0 && i < end {
			end = i
		}
	}
	return strings.TrimSuffix(s[:end], ".")
}

// security lists an operation's ways in: each requirement's schemes
// joined by "and"; an empty requirement is "none".
func (r reference) security(op *node) []template.HTML {
	sec := op.get("security")
	if sec == nil {
		sec = r.root.get("security")
	}
	var out []template.HTML
	sec.eachItem(func(req *node) {
		if len(req.keys) == 0 {
			out = append(out, "none")
			return
		}
		var names []string
		for _, k := range req.keys {
			names = append(names, fmt.Sprintf(`<a href="#auth-%s">%s</a>`, anchor(k), html.EscapeString(k)))
		}
		out = append(out, template.HTML(strings.Join(names, " and ")))
	})
	if len(out) == 0 {
		out = append(out, "none")
	}
	return out
}

func (r reference) schemas() []schemaView {
	var out []schemaView
	r.root.get("components", "schemas").each(func(name string, s *node) {
		v := schemaView{Name: name, Anchor: "schema-" + anchor(name), Description: markdown(s.str("description"))}
		if !s.has("properties") && !s.has("allOf") {
			v.Type = r.typeOf(s)
		}
		s.get("allOf").eachItem(func(m *node) {
			if m.has("$ref") {
				v.Includes = append(v.Includes, r.typeOf(m))
			}
		})
		v.Fields, v.Notes = r.fields(s, "", 0)
		s.get("oneOf").eachItem(func(m *node) {
			if m.has("properties") {
				f, _ := r.fields(m, "", 0)
				v.Notes = append(v.Notes, "The object form has these fields:")
				v.Fields = append(v.Fields, f...)
			}
		})
		out = append(out, v)
	})
	return out
}

// fields spells out an object schema's properties (those of its inline
// allOf members too), nested inline objects under dotted names; a
// referenced schema is a link, not repeated. notes say which fields
// exclude each other (a oneOf of required lists).
func (r reference) fields(s *node, prefix string, depth int) ([]fieldView, []template.HTML) {
	if s == nil || depth > maxDepth {
		return nil, nil
	}
	var out []fieldView
	var notes []template.HTML
	s.get("allOf").eachItem(func(m *node) {
		if !m.has("$ref") {
			f, n := r.fields(m, prefix, depth)
			out, notes = append(out, f...), append(notes, n...)
		}
	})
	required := map[string]bool{}
	for _, k := range s.get("required").strings() {
		required[k] = true
	}
	s.get("properties").each(func(name string, p *node) {
		desc := p.str("description")
		target, _ := r.deref(p)
		if desc == "" && target != p {
			desc = target.str("description")
		}
		fv := fieldView{
			Name: prefix + name, Depth: depth, Type: r.typeOf(p), Required: required[name],
			Description: markdownInline(desc), Facts: facts(p),
		}
		out = append(out, fv)
		switch {
		case p.has("properties"):
			f, n := r.fields(p, prefix+name+".", depth+1)
			out, notes = append(out, f...), append(notes, n...)
		case p.str("type") == "array" && p.get("items").has("properties"):
			f, n := r.fields(p.get("items"), prefix+name+"[].", depth+1)
			out, notes = append(out, f...), append(notes, n...)
		}
	})
	if exclusive := requiredChoice(s); len(exclusive) > 0 {
		notes = append(notes, template.HTML("Exactly one of: "+strings.Join(exclusive, ", ")+"."))
	}
	return out, notes
}

// requiredChoice is the fields of a oneOf made of bare required lists
// (oneOf: [{required: [files]}, {required: [url]}]), as code spans.
func requiredChoice(s *node) []string {
	var out []string
	for _, m := range s.get("oneOf").itemsOrNil() {
		if len(m.keys) != 1 || !m.has("required") {
			return nil
		}
		for _, f := range m.get("required").strings() {
			out = append(out, codeSpan(f))
		}
	}
	return out
}

func codeSpan(s string) string { return "<code>" + html.EscapeString(s) + "</code>" }

// deref resolves a local $ref (#/components/<kind>/<name>); n itself when
// it has none. name is the referenced component's name.
func (r reference) deref(n *node) (*node, string) {
	ref := n.str("$ref")
	if ref == "" {
		return n, ""
	}
	parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
	if t := r.root.get(parts...); t != nil {
		return t, parts[len(parts)-1]
	}
	return n, ""
}

// typeOf says what a schema is: a link to a named schema, or its type in words.
func (r reference) typeOf(s *node) template.HTML {
	if s == nil {
		return ""
	}
	if ref := s.str("$ref"); ref != "" {
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		return template.HTML(fmt.Sprintf(`<a href="#schema-%s">%s</a>`, anchor(name), html.EscapeString(name)))
	}
	if c := s.get("const"); c != nil {
		return template.HTML("<code>" + html.EscapeString(c.text()) + "</code>")
	}
	for _, comb := range []string{"oneOf", "anyOf"} {
		if alts := s.get(comb); alts != nil && requiredChoice(s) == nil {
			var parts []string
			for _, a := range alts.items {
				parts = append(parts, string(r.typeOf(a)))
			}
			return template.HTML(strings.Join(parts, " or "))
		}
	}
	if all := s.get("allOf"); all != nil {
		var parts []string
		for _, a := range all.items {
			parts = append(parts, string(r.typeOf(a)))
		}
		return template.HTML(strings.Join(parts, " + "))
	}
	types := s.get("type").strings()
	if t := s.str("type"); t != "" {
		types = []string{t}
	}
	if len(types) == 0 {
		if s.has("properties") {
			return "object"
		}
		return "any"
	}
	var parts []string
	for _, t := range types {
		switch {
		case t == "array":
			t = "array of " + string(r.typeOf(s.get("items")))
		case t == "object" && s.has("additionalProperties") && !s.has("properties") && s.get("additionalProperties").fields != nil:
			t = "map of " + string(r.typeOf(s.get("additionalProperties")))
		case t == "string" && s.str("contentMediaType") != "":
			t = "binary (" + html.EscapeString(s.str("contentMediaType")) + ")"
			if s.str("contentEncoding") == "base64" {
				t = "base64 " + html.EscapeString(s.str("contentMediaType"))
			}
		case s.str("format") != "" && t != "null":
			t += " (" + html.EscapeString(s.str("format")) + ")"
		default:
			t = html.EscapeString(t)
		}
		parts = append(parts, t)
	}
	return template.HTML(strings.Join(parts, " or "))
}

// facts are a schema's default, allowed values and bounds, in short.
func facts(s *node) string {
	if s == nil {
		return ""
	}
	var out []string
	if e := s.get("enum"); e != nil {
		out = append(out, "one of "+strings.Join(e.strings(), ", "))
	}
	if d := s.get("default"); d != nil {
		out = append(out, "default "+d.text())
	}
	bound := func(lo, hi, unit string) {
		l, h := s.get(lo), s.get(hi)
		switch {
		case l != nil && h != nil:
			out = append(out, fmt.Sprintf("%s–%s%s", l.text(), h.text(), unit))
		case l != nil:
			out = append(out, fmt.Sprintf("at least %s%s", l.text(), unit))
		case h != nil:
			out = append(out, fmt.Sprintf("at most %s%s", h.text(), unit))
		}
	}
	bound("minimum", "maximum", "")
	if l := s.get("minLength"); l != nil && l.text() == "1" && !s.has("maxLength") {
		out = append(out, "not empty")
	} else {
		bound("minLength", "maxLength", " characters")
	}
	bound("minItems", "maxItems", " items")
	bound("minProperties", "maxProperties", " entries")
	if p := s.str("pattern"); p != "" {
		out = append(out, "pattern "+p)
	}
	return strings.Join(out, "; ")
}

// anchor makes a name safe as an HTML id.
func anchor(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// eachItem calls f for every item of an array node.
func (n *node) eachItem(f func(*node)) {
	for _, it := range n.itemsOrNil() {
		f(it)
	}
}

func (n *node) itemsOrNil() []*node {
	if n == nil {
		return nil
	}
	return n.items
}
