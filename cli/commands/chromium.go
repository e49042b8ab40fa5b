package commands

import (
	"context"
	"flag"
	"reflect"
	"strconv"
	"strings"

	"github.com/docrender/docrender/client"
)

// The chromium routes of DESIGN §11 besides render: a screenshot of a
// page, and a Markdown document printed as a PDF.

// runScreenshot is `docrender screenshot FILE|DIR|URL`.
func runScreenshot(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("screenshot")
	format := fs.String("format", "", "")
	quality := fs.Int("quality", 0, "")
	fullPage := fs.Bool("full-page", false, "")
	clip := fs.String("clip", "", "")
	width := fs.Int("width", 0, "")
	height := fs.Int("height", 0, "")
	omit := fs.Bool("omit-background", false, "")
	o := addSourceFlags(fs)
	src, m, err := o.parse(fs, args, "screenshot", "one FILE, DIR or URL", reflect.TypeFor[client.ScreenshotOptions]())
	if err != nil {
		return err
	}
	// The flags are options too, beside --option's (the waits, say).
	for k, v := range map[string]any{"format": *format, "quality": *quality, "fullPage": *fullPage, "width": *width, "height": *height, "omitBackground": *omit} {
		if !reflect.ValueOf(v).IsZero() {
			m[k] = v
		}
	}
	if *clip != "" {
		if m["clip"], err = parseClip(*clip); err != nil {
			return err
		}
	}
	req := client.ScreenshotRequest{}
	if len(m) > 0 {
		req.Options = &client.ScreenshotOptions{Extra: m}
	}
	stem := "screenshot"
	if isURL(src) {
		req.URL = src
	} else {
		if req.Files, err = uploads(src); err != nil {
			return err
		}
		stem = strings.TrimSuffix(pdfName(src), ".pdf")
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	ext := "png"
	if f, ok := m["format"].(string); ok {
		ext = extensionOf("image/" + strings.ToLower(strings.TrimSpace(f)))
	}
	return a.deliver(*o.host, *o.out, stem+"."+ext,
		func() (*client.Hosted, error) { return c.ScreenshotHosted(ctx, req) },
		func() (*client.Download, error) { return c.Screenshot(ctx, req) })
}

// sourceFlags are the flags of a command on one page or document
// (screenshot, markdown): -o, --host and --option.
type sourceFlags struct {
	out  *string
	host *bool
	opts multiFlag
}

func addSourceFlags(fs *flag.FlagSet) *sourceFlags {
	s := &sourceFlags{out: fs.String("o", "", ""), host: fs.Bool("host", false, "")}
	fs.Var(&s.opts, "option", "")
	return s
}

// parse reads the flags and the one argument of cmd (what says what it
// is), and the --option values as options of typ.
func (s *sourceFlags) parse(fs *flag.FlagSet, args []string, cmd, what string, typ reflect.Type) (string, map[string]any, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", nil, err
	}
	if len(pos) != 1 {
		return "", nil, usageErrorf("%s takes %s (got %d arguments)", cmd, what, len(pos))
	}
	m, err := parseOptions(s.opts, typ)
	return pos[0], m, err
}

// parseClip reads --clip X,Y,WIDTH,HEIGHT (CSS pixels).
func parseClip(s string) (map[string]float64, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return nil, usageErrorf("--clip %q: want X,Y,WIDTH,HEIGHT in CSS pixels, e.g. --clip 0,0,800,600", s)
	}
	out := map[string]float64{}
	for i, name := range []string{"x", "y", "width", "height"} {
		v, err := strconv.ParseFloat(strings.TrimSpace(parts[i]), 64)
		if err != nil {
			return nil, usageErrorf("--clip %q: %s is not a number", s, name)
		}
		out[name] = v
	}
	return out, nil
}

// runMarkdown is `docrender markdown FILE.md|DIR`.
func runMarkdown(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("markdown")
	tmpl := fs.String("template", "", "")
	noOutline := fs.Bool("no-outline", false, "")
	o := addSourceFlags(fs)
	src, m, err := o.parse(fs, args, "markdown", "one FILE.md or DIR", reflect.TypeFor[client.PDFOptions]())
	if err != nil {
		return err
	}
	req := client.MarkdownRequest{NoOutline: *noOutline}
	if len(m) > 0 {
		req.Options = &client.PDFOptions{Extra: m}
	}
	if req.Files, err = uploads(src); err != nil {
		return err
	}
	if *tmpl != "" {
		if _, err := uploads(*tmpl); err != nil {
			return err
		}
		// Whatever its name here, the service knows it as template.html.
		req.Files = append(req.Files, client.UploadFile(*tmpl, "template.html"))
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	return a.deliver(*o.host, *o.out, pdfName(src),
		func() (*client.Hosted, error) { return c.MarkdownHosted(ctx, req) },
		func() (*client.Download, error) { return c.Markdown(ctx, req) })
}
