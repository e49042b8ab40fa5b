package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/docrender/docrender/pkg/client"
)

func isURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://")
}

// runRender is `docrender render FILE|DIR|URL`.
func runRender(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("render")
	out := fs.String("o", "", "")
	host := fs.Bool("host", false, "")
	var opts multiFlag
	fs.Var(&opts, "option", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("render takes one FILE, DIR or URL (got %d arguments)", len(pos))
	}
	m, err := parseOptions(opts, reflect.TypeFor[client.PDFOptions]())
	if err != nil {
		return err
	}
	req := client.GenerateRequest{}
	if len(m) > 0 {
		req.Options = &client.PDFOptions{Extra: m}
	}
	src := pos[0]
	defaultOut := ""
	if isURL(src) {
		req.URL = src
	} else {
		st, err := os.Stat(src)
		if err != nil {
			return inputErrorf("%v", err)
		}
		if st.IsDir() {
			if req.Files, err = client.UploadDir(src); err != nil {
				return inputErrorf("%v", err)
			}
			if len(req.Files) == 0 {
				return inputErrorf("%s holds no files", src)
			}
		} else {
			req.Files = []client.Upload{client.UploadFile(src, "")}
		}
		defaultOut = pdfName(src)
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	if *host {
		h, err := c.GenerateHosted(ctx, req)
		if err != nil {
			return err
		}
		a.printHosted(h.URL, h.PdfID, h.ExpiresAt)
		return nil
	}
	d, err := c.Generate(ctx, req)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = defaultOut
	}
	return a.save(d, *out)
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
	fmt.Fprintln(a.env.Stdout, url)
	fmt.Fprintf(a.env.Stderr, "hosted %s until %s\n", id, expires.Local().Format(time.RFC1123))
}

// save writes d to out ("" for the service's name, "-" for standard
// output). A file appears whole or not at all: it is written beside its
// final name and renamed.
func (a *app) save(d *client.Download, out string) error {
	defer d.Body.Close()
	if out == "-" {
		_, err := io.Copy(a.env.Stdout, d.Body)
		return err
	}
	if out == "" {
		out = filepath.Base(d.Name)
		if out == "" || out == "." || out == "/" {
			out = "download"
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
	if err := os.Rename(tmp.Name(), out); err != nil {
		return inputErrorf("%v", err)
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
	fmt.Fprintf(a.env.Stderr, "wrote %s (%s)\n", out, what)
	return nil
}

// runMerge is `docrender merge a.pdf b.pdf ...`.
func runMerge(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("merge")
	out := fs.String("o", "", "")
	host := fs.Bool("host", false, "")
	var opts multiFlag
	fs.Var(&opts, "option", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("merge takes the PDFs to merge, in order")
	}
	m, err := parseOptions(opts, reflect.TypeFor[client.MergeOptions]())
	if err != nil {
		return err
	}
	req := client.MergeRequest{}
	if len(m) > 0 {
		req.Options = &client.MergeOptions{Extra: m}
	}
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return inputErrorf("%v", err)
		}
		if st.IsDir() {
			return inputErrorf("%s is a folder, not a PDF", p)
		}
		req.Files = append(req.Files, client.UploadFile(p, ""))
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	if *host {
		h, err := c.MergeHosted(ctx, req)
		if err != nil {
			return err
		}
		a.printHosted(h.URL, h.PdfID, h.ExpiresAt)
		return nil
	}
	d, err := c.Merge(ctx, req)
	if err != nil {
		return err
	}
	return a.save(d, *out)
}

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
	return a.save(d, *out)
}
