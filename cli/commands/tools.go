package commands

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/docrender/docrender/client"
)

// The PDF tools of DESIGN §11 as commands: each takes one PDF FILE, sends
// it with its flags as the options, and writes what comes back (or, with
// --host, prints the link of the stored output).

// toolFlags are the flags every tool command takes.
type toolFlags struct {
	out  *string
	host *bool
	name *string
}

func addToolFlags(fs *flag.FlagSet) *toolFlags {
	return &toolFlags{out: fs.String("o", "", ""), host: fs.Bool("host", false, ""), name: fs.String("name", "", "")}
}

// toolHelp is the help of the flags every tool takes; %s is the default
// output.
const toolHelp = `  -o FILE         where to write the output (default %s, not overwritten if
                  it exists; - for standard output)
  --name NAME     the output's name at the service (a hosted file's, and
                  the stem of a ZIP's entries; default the PDF's name)
  --host          store the output behind an expiring link and print the link
`

// parse reads the flags and the one PDF of cmd; it returns the upload and
// the PDF's name without its extension, for default output names.
func (t *toolFlags) parse(fs *flag.FlagSet, args []string, cmd string) (client.Upload, string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return client.Upload{}, "", err
	}
	if len(pos) != 1 {
		return client.Upload{}, "", usageErrorf("%s takes one PDF FILE", cmd)
	}
	st, err := os.Stat(pos[0])
	if err != nil {
		return client.Upload{}, "", inputErrorf("%v", err)
	}
	if st.IsDir() {
		return client.Upload{}, "", inputErrorf("%s is a folder, not a PDF", pos[0])
	}
	return client.UploadFile(pos[0], ""), strings.TrimSuffix(pdfName(pos[0]), ".pdf"), nil
}

func (t *toolFlags) options() client.ToolOptions { return client.ToolOptions{FileName: *t.name} }

// run sends req and delivers its answer: to -o, else to def, or its
// link with --host. A def ending in "." is completed with the extension
// of the answer's type, known only once it comes (images: one image or a
// ZIP of them); the service's own name for the file is never used.
func (t *toolFlags) run(ctx context.Context, a *app, req client.ToolRequest, def string, send func(*client.Client) (*client.Download, error)) error {
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	hosted := func() (*client.Hosted, error) { return c.ToolHosted(ctx, req) }
	download := func() (*client.Download, error) { return send(c) }
	if !strings.HasSuffix(def, ".") || *t.host {
		return a.deliver(*t.host, *t.out, def, hosted, download)
	}
	d, err := download()
	if err != nil {
		return err
	}
	return a.save(d, *t.out, def+extensionOf(d.ContentType))
}

// extensionOf is the extension of a tool's output type.
func extensionOf(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	switch strings.TrimSpace(mt) {
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	case "image/webp":
		return "webp"
	case "application/zip":
		return "zip"
	}
	return "bin"
}

// runSplit is `docrender split FILE --ranges R | --every N`.
func runSplit(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("split")
	ranges := fs.String("ranges", "", "")
	every := fs.Int("every", 0, "")
	t := addToolFlags(fs)
	stages := addPDFStepsFlags(fs)
	file, stem, err := t.parse(fs, args, "split")
	if err != nil {
		return err
	}
	if (*ranges == "") == (*every == 0) {
		return usageErrorf("split takes --ranges (like 1-3,4-9) or --every N, one of them")
	}
	steps, err := stages.pdfSteps()
	if err != nil {
		return err
	}
	req := client.SplitRequest{File: file, Ranges: *ranges, Every: *every, ToolOptions: t.options(), PDFSteps: steps}
	return t.run(ctx, a, req, stem+"-split.zip", func(c *client.Client) (*client.Download, error) { return c.Split(ctx, req) })
}

// runPages is `docrender pages FILE [--select S] [--rotate P=DEG ...] [--delete D]`.
func runPages(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("pages")
	sel := fs.String("select", "", "")
	del := fs.String("delete", "", "")
	var rotate multiFlag
	fs.Var(&rotate, "rotate", "")
	t := addToolFlags(fs)
	stages := addPDFStepsFlags(fs)
	file, stem, err := t.parse(fs, args, "pages")
	if err != nil {
		return err
	}
	steps, err := stages.pdfSteps()
	if err != nil {
		return err
	}
	req := client.PagesRequest{File: file, Select: *sel, Delete: *del, ToolOptions: t.options(), PDFSteps: steps}
	for _, r := range rotate {
		pages, deg, ok := strings.Cut(r, "=")
		n, err := strconv.Atoi(strings.TrimSpace(deg))
		if !ok || err != nil || strings.TrimSpace(pages) == "" {
			return usageErrorf("--rotate %q: want PAGES=DEGREES, e.g. --rotate 2-3=90", r)
		}
		if req.Rotate == nil {
			req.Rotate = map[string]int{}
		}
		req.Rotate[strings.TrimSpace(pages)] += n
	}
	if *sel == "" && *del == "" && req.Rotate == nil {
		return usageErrorf("pages takes --select, --rotate or --delete")
	}
	return t.run(ctx, a, req, stem+"-pages.pdf", func(c *client.Client) (*client.Download, error) { return c.Pages(ctx, req) })
}

// runFlatten is `docrender flatten FILE`.
func runFlatten(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("flatten")
	t := addToolFlags(fs)
	stages := addPDFStepsFlags(fs)
	file, stem, err := t.parse(fs, args, "flatten")
	if err != nil {
		return err
	}
	steps, err := stages.pdfSteps()
	if err != nil {
		return err
	}
	req := client.FlattenRequest{File: file, ToolOptions: t.options(), PDFSteps: steps}
	return t.run(ctx, a, req, stem+"-flat.pdf", func(c *client.Client) (*client.Download, error) { return c.Flatten(ctx, req) })
}

// runOptimize is `docrender optimize FILE [--image-quality N] [--max-image-dpi N]`;
// the sizes before and after go to standard error.
func runOptimize(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("optimize")
	quality := fs.Int("image-quality", -1, "")
	dpi := fs.Int("max-image-dpi", -1, "")
	t := addToolFlags(fs)
	stages := addPDFStepsFlags(fs)
	file, stem, err := t.parse(fs, args, "optimize")
	if err != nil {
		return err
	}
	steps, err := stages.pdfSteps()
	if err != nil {
		return err
	}
	req := client.OptimizeRequest{File: file, ToolOptions: t.options(), PDFSteps: steps}
	// -1: not given, the service's default.
	if *quality != -1 {
		req.ImageQuality = quality
	}
	if *dpi != -1 {
		req.MaxImageDpi = dpi
	}
	return t.run(ctx, a, req, stem+"-optimized.pdf", func(c *client.Client) (*client.Download, error) {
		d, err := c.Optimize(ctx, req)
		if err == nil && d.BytesBefore > 0 {
			fmt.Fprintf(a.env.Stderr, "%d bytes → %d bytes\n", d.BytesBefore, d.BytesAfter)
		}
		return d, err
	})
}

// runMetadata is `docrender metadata FILE [--title T] [--author A]
// [--subject S] [--keywords a,b] [--creator C]`: the PDF with its
// document information (Info and XMP) rewritten.
func runMetadata(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("metadata")
	var md client.Metadata
	fs.StringVar(&md.Title, "title", "", "")
	fs.StringVar(&md.Author, "author", "", "")
	fs.StringVar(&md.Subject, "subject", "", "")
	keywords := fs.String("keywords", "", "")
	fs.StringVar(&md.Creator, "creator", "", "")
	t := addToolFlags(fs)
	stages := addPDFStepsFlags(fs)
	file, stem, err := t.parse(fs, args, "metadata")
	if err != nil {
		return err
	}
	for _, k := range strings.Split(*keywords, ",") {
		if k = strings.TrimSpace(k); k != "" {
			md.Keywords = append(md.Keywords, k)
		}
	}
	if md.Title == "" && md.Author == "" && md.Subject == "" && md.Creator == "" && len(md.Keywords) == 0 {
		return usageErrorf("metadata takes at least one of --title, --author, --subject, --keywords and --creator")
	}
	steps, err := stages.pdfSteps()
	if err != nil {
		return err
	}
	req := client.MetadataRequest{File: file, Metadata: &md, ToolOptions: t.options(), PDFSteps: steps}
	return t.run(ctx, a, req, stem+"-metadata.pdf", func(c *client.Client) (*client.Download, error) { return c.SetMetadata(ctx, req) })
}

// runText is `docrender text FILE [--markdown] [--pages P]`: to standard
// output unless -o names a file.
func runText(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("text")
	markdown := fs.Bool("markdown", false, "")
	pages := fs.String("pages", "", "")
	t := addToolFlags(fs)
	file, _, err := t.parse(fs, args, "text")
	if err != nil {
		return err
	}
	req := client.TextRequest{File: file, Pages: *pages, ToolOptions: t.options()}
	if *markdown {
		req.Format = "markdown"
	}
	if *t.out == "" {
		*t.out = "-"
	}
	return t.run(ctx, a, req, "-", func(c *client.Client) (*client.Download, error) { return c.Text(ctx, req) })
}

// runImages is `docrender images FILE [--format F] [--dpi N] [--pages P]`.
func runImages(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("images")
	format := fs.String("format", "", "")
	dpi := fs.Int("dpi", 0, "")
	pages := fs.String("pages", "", "")
	t := addToolFlags(fs)
	file, stem, err := t.parse(fs, args, "images")
	if err != nil {
		return err
	}
	req := client.ImagesRequest{File: file, Format: *format, DPI: *dpi, Pages: *pages, ToolOptions: t.options()}
	return t.run(ctx, a, req, stem+"-images.", func(c *client.Client) (*client.Download, error) { return c.Images(ctx, req) })
}
