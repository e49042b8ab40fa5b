package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

func isURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// runRender is `docrender render FILE|DIR|URL`, or `docrender render
// --template NAME[@VERSION] [--data FILE|-]`.
func runRender(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("render")
	out := fs.String("o", "", "")
	host := fs.Bool("host", false, "")
	key := fs.String("idempotency-key", "", "")
	tmpl := fs.String("template", "", "")
	data := fs.String("data", "", "")
	var opts multiFlag
	fs.Var(&opts, "option", "")
	toc := fs.Bool("toc", false, "")
	var split triFlag
	fs.Var(&split, "split", "")
	rec := addRecordFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *tmpl != "" && len(pos) != 0:
		return usageErrorf("render --template takes no FILE, DIR or URL: the data comes with --data FILE.json (- for standard input)")
	case *tmpl == "" && *data != "":
		return usageErrorf("--data needs --template NAME: the stored template it fills")
	case *tmpl == "" && len(pos) != 1:
		return usageErrorf("render takes one FILE, DIR or URL, or --template NAME --data FILE.json (got %d arguments)", len(pos))
	}
	m, err := parseOptions(opts, reflect.TypeFor[client.PDFOptions]())
	if err != nil {
		return err
	}
	if err := rec.apply(m); err != nil {
		return err
	}
	// Shorthands for the long-document options (DESIGN §10), as --pdfa is.
	if *toc {
		m["toc"] = true
	}
	switch {
	case split.v != nil:
		m["split"] = *split.v
	case split.given: // auto: the service decides, whatever --option said
		delete(m, "split")
	}
	if *tmpl != "" {
		return renderTemplate(ctx, a, *tmpl, *data, m, rec, *key, *out, *host)
	}
	req := client.GenerateRequest{IdempotencyKey: *key}
	if req.Attachments, req.EInvoiceXML, err = rec.uploads(); err != nil {
		return err
	}
	if len(m) > 0 {
		req.Options = &client.PDFOptions{Extra: m}
	}
	src := pos[0]
	// A file's PDF is named after it and replaces an older one; a page's
	// gets a fixed name, never the service's, and replaces nothing.
	defaultOut, replace := "", true
	if isURL(src) {
		req.URL = src
		defaultOut, replace = "document.pdf", false
	} else {
		if req.Files, err = uploads(src); err != nil {
			return err
		}
		defaultOut = pdfName(src)
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	if *out == "" && replace {
		*out = defaultOut
	}
	return a.deliver(*host, *out, defaultOut,
		func() (*client.Hosted, error) { return c.GenerateHosted(ctx, req) },
		func() (*client.Download, error) { return c.Generate(ctx, req) })
}

// uploads are what src, a file or a folder, sends: the file alone, or
// every file of the folder with its path relative to it (so that a page
// finds its assets by the links it has).
func uploads(src string) ([]client.Upload, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	if !st.IsDir() {
		return []client.Upload{client.UploadFile(src, "")}, nil
	}
	files, err := client.UploadDir(src)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	if len(files) == 0 {
		return nil, inputErrorf("%s holds no files", src)
	}
	return files, nil
}

// deliver hosts a PDF and prints its link (host), or downloads it to out
// (def when out is empty, refused if def exists: nothing is overwritten
// that -o did not name).
func (a *app) deliver(host bool, out, def string, hosted func() (*client.Hosted, error), download func() (*client.Download, error)) error {
	if host {
		h, err := hosted()
		if err != nil {
			return err
		}
		a.printHosted(h.URL, h.PdfID, h.ExpiresAt)
		return nil
	}
	if out == "" {
		if err := notThere(def); err != nil {
			return err
		}
	}
	d, err := download()
	if err != nil {
		return err
	}
	return a.save(d, out, def)
}

// pdfName is the default output of rendering src: its name with .pdf, in
// the current folder.
func pdfName(src string) string {
	base := filepath.Base(filepath.Clean(src))
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "document"
	}
	return base + ".pdf"
}

func (a *app) printHosted(url, id string, expires time.Time) {
	fmt.Fprintln(a.env.Stdout, term.Safe(url))
	fmt.Fprintf(a.env.Stderr, "hosted %s until %s\n", term.Safe(id), expires.Local().Format(time.RFC1123))
}

// notThere refuses a default output name already taken: only a name the
// user gave with -o may replace a file.
func notThere(name string) error {
	if _, err := os.Lstat(name); err == nil {
		return inputErrorf("%s exists; not replacing it (-o names the file to write, and may name this one)", name)
	}
	return nil
}

// save writes d to out, the file -o named ("-" for standard output),
// which it replaces if it exists; or, when out is "", to def, a name of
// this command's choosing (never the service's), which replaces nothing.
// A file appears whole or not at all: it is written beside its final
// name, then renamed (or linked, which fails if the name was taken
// meanwhile).
func (a *app) save(d *client.Download, out, def string) error {
	defer d.Body.Close()
	if out == "-" {
		_, err := io.Copy(a.env.Stdout, d.Body)
		return err
	}
	replace := out != ""
	if !replace {
		out = def
		if err := notThere(out); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".part-*")
	if err != nil {
		return inputErrorf("%v", err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, d.Body)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("receiving %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return inputErrorf("%v", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return inputErrorf("%v", err)
	}
	if err := place(tmp.Name(), out, replace); err != nil {
		return err
	}
	what := fmt.Sprintf("%d bytes", n)
	pages := d.Pages
	if d.Report != nil {
		pages = d.Report.Pages
	}
	switch {
	case pages == 1:
		what = "1 page, " + what
	case pages > 1:
		what = fmt.Sprintf("%d pages, %s", pages, what)
	}
	fmt.Fprintf(a.env.Stderr, "wrote %s (%s)\n", term.Safe(out), what)
	return nil
}

// place gives the written file tmp its name out: a rename when it may
// replace a file, else a hard link, which fails if out exists (a rename
// where links are not supported, after a last look).
func place(tmp, out string, replace bool) error {
	if !replace {
		err := os.Link(tmp, out)
		if err == nil {
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return notThere(out)
		}
		if err := notThere(out); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return inputErrorf("%v", err)
	}
	return nil
}

// runMerge is `docrender merge a.pdf b.pdf ...`.
func runMerge(ctx context.Context, a *app, args []string) error {
	f := newFilesFlags("merge")
	key := f.fs.String("idempotency-key", "", "")
	pos, m, err := f.parse(args, reflect.TypeFor[client.MergeOptions](), "merge takes the PDFs to merge, in order")
	if err != nil {
		return err
	}
	out, host, rec := f.out, f.host, f.rec
	req := client.MergeRequest{IdempotencyKey: *key}
	if req.Attachments, req.EInvoiceXML, err = rec.uploads(); err != nil {
		return err
	}
	if len(m) > 0 {
		req.Options = &client.MergeOptions{Extra: m}
	}
	if req.Files, err = fileUploads(pos, "a PDF"); err != nil {
		return err
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	return a.deliver(*host, *out, mergedName,
		func() (*client.Hosted, error) { return c.MergeHosted(ctx, req) },
		func() (*client.Download, error) { return c.Merge(ctx, req) })
}

// filesFlags are the flags of a command that sends files with options
// and the record flags (merge, office); a command adds its own to fs.
type filesFlags struct {
	fs   *flag.FlagSet
	out  *string
	host *bool
	opts multiFlag
	rec  *recordFlags
}

func newFilesFlags(name string) *filesFlags {
	f := &filesFlags{fs: newFlagSet(name)}
	f.out = f.fs.String("o", "", "")
	f.host = f.fs.Bool("host", false, "")
	f.fs.Var(&f.opts, "option", "")
	f.rec = addRecordFlags(f.fs)
	return f
}

// parse reads args: the files (none is a usage error saying none), and
// the options of typ with the record flags' shorthands applied.
func (f *filesFlags) parse(args []string, typ reflect.Type, none string) ([]string, map[string]any, error) {
	pos, err := parseArgs(f.fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) == 0 {
		return nil, nil, usageErrorf("%s", none)
	}
	m, err := parseOptions(f.opts, typ)
	if err != nil {
		return nil, nil, err
	}
	if err := f.rec.apply(m); err != nil {
		return nil, nil, err
	}
	return pos, m, nil
}

// fileUploads are the files named by paths, each a file (what: "a PDF"),
// not a folder.
func fileUploads(paths []string, what string) ([]client.Upload, error) {
	var ups []client.Upload
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if st.IsDir() {
			return nil, inputErrorf("%s is a folder, not %s", p, what)
		}
		ups = append(ups, client.UploadFile(p, ""))
	}
	return ups, nil
}

// mergedName is where merge writes without -o.
const mergedName = "merged.pdf"

// runQR is `docrender qr TEXT`.
func runQR(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("qr")
	out := fs.String("o", "qr.png", "")
	size := fs.Int("size", 0, "")
	margin := fs.Int("margin", -1, "")
	ecc := fs.String("ecc", "", "")
	dark := fs.String("dark", "", "")
	light := fs.String("light", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("qr takes one TEXT to encode (quote it if it has spaces)")
	}
	req := client.QRRequest{Data: pos[0], Size: *size, ErrorCorrectionLevel: strings.ToUpper(*ecc), DarkColor: *dark, LightColor: *light}
	if *margin >= 0 {
		req.Margin = client.Int(*margin)
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	png, err := c.QRCode(ctx, req)
	if err != nil {
		return err
	}
	d := &client.Download{Body: io.NopCloser(strings.NewReader(string(png))), Name: "qr.png"}
	return a.save(d, *out, "qr.png")
}
