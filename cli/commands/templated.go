package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/docrender/docrender/client"
)

// Rendering stored templates (DESIGN §9): render --template, batch
// --template, template preview.

// templateVersionSuffix is NAME@VERSION's version.
var templateVersionSuffix = regexp.MustCompile(`@([0-9]+)$`)

// parseTemplateRef reads --template NAME[@VERSION]: a stored template's
// name, and optionally one of its versions (else the latest). A name
// ending in @ and digits is read as a version.
func parseTemplateRef(s string) (client.TemplateRef, error) {
	ref := client.TemplateRef{Name: strings.TrimSpace(s)}
	if m := templateVersionSuffix.FindStringSubmatchIndex(ref.Name); m != nil {
		v, err := strconv.Atoi(ref.Name[m[2]:m[3]])
		if err != nil || v < 1 {
			return ref, usageErrorf("--template %s: the version after @ is a number from 1", s)
		}
		ref.Name, ref.Version = ref.Name[:m[0]], v
	}
	if ref.Name == "" {
		return ref, usageErrorf("--template takes a stored template's NAME, or NAME@VERSION")
	}
	return ref, nil
}

// jsonLine is the 1-based line of a byte offset in b.
func jsonLine(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// jsonProblem says what is wrong with JSON text b, at which line when
// the decoder knows.
func jsonProblem(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("line %d: %s", jsonLine(b, se.Offset), se.Error())
	case errors.As(err, &te):
		return fmt.Sprintf("line %d: %s", jsonLine(b, te.Offset), te.Error())
	}
	return err.Error()
}

// isJSONObject reports whether raw JSON is an object.
func isJSONObject(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// readTemplateData reads --data FILE|-: one JSON object.
func (a *app) readTemplateData(name string) (json.RawMessage, error) {
	b, err := a.readInput(name)
	if err != nil {
		return nil, err
	}
	what := name
	if name == "-" {
		what = "standard input"
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if err == io.EOF {
			return nil, inputErrorf("--data %s is empty: want a JSON object", what)
		}
		return nil, inputErrorf("--data %s: %s", what, jsonProblem(b, err))
	}
	if !isJSONObject(raw) {
		return nil, inputErrorf("--data %s: want a JSON object ({...}), the template's data", what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, inputErrorf("--data %s: line %d: more after the JSON object", what, jsonLine(b, dec.InputOffset()))
	}
	return raw, nil
}

// templateOutName is the default output of a template render: the data
// file's name with .pdf, or for data on standard input the template's
// name with .pdf (document.pdf when that is no plain file name).
func templateOutName(dataFile string, ref client.TemplateRef) string {
	if dataFile != "" && dataFile != "-" {
		return pdfName(dataFile)
	}
	if plainID.MatchString(ref.Name) {
		return ref.Name + ".pdf"
	}
	return "document.pdf"
}

// renderTemplate is `docrender render --template NAME[@VERSION] [--data FILE|-]`.
func renderTemplate(ctx context.Context, a *app, tmpl, dataFile string, m map[string]any, rec *recordFlags, key, out string, host bool) error {
	ref, err := parseTemplateRef(tmpl)
	if err != nil {
		return err
	}
	// The body is JSON: the files of --attach and --einvoice-xml go
	// inline in the options, as a batch sends them.
	if err := rec.inline(m); err != nil {
		return err
	}
	req := client.TemplateRequest{Template: ref, IdempotencyKey: key}
	if dataFile != "" {
		if req.Data, err = a.readTemplateData(dataFile); err != nil {
			return err
		}
	}
	if len(m) > 0 {
		req.Options = &client.PDFOptions{Extra: m}
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	// A data file's PDF is named after it and replaces an older one, as
	// a rendered file's does; one of data on standard input replaces
	// nothing.
	def := templateOutName(dataFile, ref)
	if out == "" && dataFile != "" && dataFile != "-" {
		out = def
	}
	return a.deliver(host, out, def,
		func() (*client.Hosted, error) { return c.GenerateTemplateHosted(ctx, req) },
		func() (*client.Download, error) { return c.GenerateTemplate(ctx, req) })
}

// maxRowLine is the longest line of a rows file: a document's data may be
// 5 MiB, with room for its name and options.
const maxRowLine = 6 << 20

// rowLineHelp is what a line of a rows file is, for its errors.
const rowLineHelp = `a line is {"data": {...}, "fileName": "...", "options": {...}}`

// templateRows reads a batch's rows (JSON Lines): one document per line,
// {"data": {...}, "fileName"?: "...", "options"?: {...print options}};
// blank lines are skipped. Anything else is an error naming the line.
func templateRows(r io.Reader, what string) ([]client.BatchDocument, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRowLine)
	var docs []client.BatchDocument
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		d, err := templateRow(line)
		if err != nil {
			return nil, inputErrorf("%s line %d: %s", what, n, err)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, inputErrorf("%s line %d: longer than %d MiB", what, n+1, maxRowLine>>20)
		}
		return nil, inputErrorf("%s: %v", what, err)
	}
	if len(docs) == 0 {
		return nil, inputErrorf("%s holds no documents: %s, one per line", what, rowLineHelp)
	}
	return docs, nil
}

// templateRow reads one line of a rows file.
func templateRow(line []byte) (client.BatchDocument, error) {
	var d client.BatchDocument
	if line[0] != '{' {
		return d, fmt.Errorf("not a JSON object: %s", rowLineHelp)
	}
	var row struct {
		Data     json.RawMessage `json:"data"`
		FileName *string         `json:"fileName"`
		Options  json.RawMessage `json:"options"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&row); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return d, fmt.Errorf("unknown key %s: %s (a row's own fields go under data, e.g. jq -c '{data: .}')", f, rowLineHelp)
		}
		return d, errors.New(jsonProblemInLine(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return d, fmt.Errorf("more after the JSON object: %s, one per line", rowLineHelp)
	}
	if len(row.Data) == 0 || string(row.Data) == "null" {
		return d, fmt.Errorf(`no "data": %s (a row's own fields go under data, e.g. jq -c '{data: .}')`, rowLineHelp)
	}
	if !isJSONObject(row.Data) {
		return d, errors.New(`"data" is not a JSON object`)
	}
	d.Data = row.Data
	if row.FileName != nil {
		if strings.TrimSpace(*row.FileName) == "" {
			return d, errors.New(`"fileName" is empty (leave it out for the default, TEMPLATE-N)`)
		}
		d.FileName = *row.FileName
	}
	if len(row.Options) > 0 && string(row.Options) != "null" {
		if !isJSONObject(row.Options) {
			return d, errors.New(`"options" is not a JSON object of print options`)
		}
		po := &client.PrintOptions{}
		od := json.NewDecoder(bytes.NewReader(row.Options))
		od.DisallowUnknownFields()
		if err := od.Decode(po); err != nil {
			return d, fmt.Errorf(`"options": %s (a document's own print options, DESIGN §6)`, strings.TrimPrefix(err.Error(), "json: "))
		}
		d.PrintOptions = po
	}
	return d, nil
}

// jsonProblemInLine is a decode error of one line, without the offset
// (the line is named).
func jsonProblemInLine(err error) string {
	return "not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ") + "; " + rowLineHelp
}

// batchTemplateDocuments reads the rows of batch --template: a file or
// standard input ("-").
func (a *app) batchTemplateDocuments(src string) ([]client.BatchDocument, error) {
	if src == "-" {
		return templateRows(a.env.Stdin, "standard input")
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, inputErrorf("%s is a folder: batch --template takes a rows file (JSON Lines), %s", src, rowLineHelp)
	}
	return templateRows(f, src)
}

// templatePreview is `docrender template preview ID [--version N] [-o out.pdf]`.
func templatePreview(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("template preview")
	out := fs.String("o", "", "")
	version := fs.Int("version", 0, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("template preview takes one template ID (docrender template ls shows them)")
	}
	if *version < 0 {
		return usageErrorf("--version is a version number from 1 (default the latest)")
	}
	c, err := a.client(needKeyOrSession)
	if err != nil {
		return err
	}
	def := "preview.pdf"
	if plainID.MatchString(pos[0]) {
		def = pos[0] + "-preview.pdf"
	}
	return a.deliver(false, *out, def, nil, func() (*client.Download, error) { return c.PreviewTemplate(ctx, pos[0], *version) })
}
