package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the docrender command built from cli/ against a service.
type cli struct {
	t   *testing.T
	bin string
	// dir is the working folder of every run.
	dir string
	env map[string]string
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// buildCLI builds bin/docrender into a temporary folder, as make build does.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docrender")
	cmd := exec.Command("go", "build", "-o", bin, "./cli/cmd/docrender")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cli/cmd/docrender: %v\n%s", err, out)
	}
	return bin
}

func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	// Only what the test sets: none of the machine's DOCRENDER_* leaks in.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.dir}
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func (c *cli) run(args ...string) cliResult {
	c.t.Helper()
	cmd := c.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("docrender %v: %v", args, err)
	}
	return res
}

// ok runs args and fails the test unless the command succeeds.
func (c *cli) ok(args ...string) cliResult {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("docrender %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// wantExit runs args and checks the exit code and that stderr says something readable.
func (c *cli) wantExit(code int, stderrHas []string, args ...string) cliResult {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("docrender %v: exit %d, want %d\nstderr: %s", args, r.code, code, r.stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			c.t.Errorf("docrender %v: stderr lacks %q:\n%s", args, s, r.stderr)
		}
	}
	return r
}

func (c *cli) write(name, content string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *cli) read(name string) []byte {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func redPNG(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for y := range 64 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{200, 20, 20, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pdfImages counts the images pdfimages finds in a PDF.
func pdfImages(t *testing.T, path string) int {
	t.Helper()
	out := run(t, "pdfimages", "-list", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return max(0, len(lines)-2) // two header lines
}

// TestCLI builds the docrender command and runs it against the embedded
// service: render a file, options, a folder with an image, a hosted
// render listed and deleted with files, a batch with plain progress lines
// and with a bar on a pseudo-terminal, merge, qr read back by zbarimg,
// usage, and each class of failure with its exit code.
func TestCLI(t *testing.T) {
	svc := sharedService(t)
	user := newClient(t, svc)
	c := &cli{t: t, bin: buildCLI(t), dir: t.TempDir(), env: map[string]string{
		"DOCRENDER_URL": svc.URL, "DOCRENDER_API_KEY": user.Key, "DOCRENDER_SESSION": user.Token,
	}}
	conversions := 0

	if r := c.ok("help"); !strings.Contains(r.stdout, "exit codes") || !strings.Contains(r.stdout, "6  network") {
		t.Errorf("help:\n%s", r.stdout)
	}

	// A file, to the name of its input.
	c.write("report.html", `<html><head><title>cli</title><style>.b{page-break-after:always}</style></head>
		<body><h1>One</h1><div class="b"></div><h1>Two</h1></body></html>`)
	r := c.ok("render", "report.html")
	conversions++
	if pi := info(t, c.read("report.pdf")); pi.Pages != 2 {
		t.Errorf("report.pdf %+v, want 2 pages", pi)
	}
	if !strings.Contains(r.stderr, "wrote report.pdf (2 pages") {
		t.Errorf("render said %q", r.stderr)
	}

	// What the service says of it (DESIGN §8), free of charge.
	var inspected struct {
		Pages  int  `json:"pages"`
		Tagged bool `json:"tagged"`
	}
	if r := c.ok("inspect", "report.pdf"); json.Unmarshal([]byte(r.stdout), &inspected) != nil || inspected.Pages != 2 || !inspected.Tagged {
		t.Errorf("inspect printed %q", r.stdout)
	}

	// A document of record (DESIGN §8) from the flags: a Factur-X invoice
	// (PDF/A-3b implied) with a file attached, then PDF/A-2u + PDF/UA in
	// German; inspect reads the claims and attachments back.
	c.write("invoice.html", recordPage)
	c.write("invoice.xml", ciiInvoice)
	c.write("lines.csv", "item,amount\nwidget,1234.00\n")
	c.ok("render", "invoice.html", "--einvoice", "EN 16931", "--einvoice-xml", "invoice.xml", "--attach", "lines.csv", "--attachment-relationship", "Supplement")
	conversions++
	invoice := c.read("invoice.pdf")
	checkRecordPDF(t, invoice, "3b", false)
	if files := detach(t, invoice); string(files["factur-x.xml"]) != ciiInvoice || string(files["lines.csv"]) != "item,amount\nwidget,1234.00\n" || len(files) != 2 {
		t.Errorf("invoice.pdf embeds %v", keys(files))
	}
	var claims struct {
		PDFA        *struct{ Part, Conformance string } `json:"pdfa"`
		PDFUA       *struct{ Part string }              `json:"pdfua"`
		Lang        string                              `json:"lang"`
		Attachments []struct{ FileName, Relationship string }
		Signatures  []json.RawMessage `json:"signatures"`
	}
	if r := c.ok("inspect", "invoice.pdf"); json.Unmarshal([]byte(r.stdout), &claims) != nil || claims.PDFA == nil || claims.PDFA.Part != "3" ||
		len(claims.Attachments) != 2 || claims.Signatures == nil {
		t.Errorf("inspect printed %q", r.stdout)
	}
	c.ok("render", "invoice.html", "-o", "accessible.pdf", "--pdfa", "2u", "--pdfua", "--lang", "de-DE")
	conversions++
	checkRecordPDF(t, c.read("accessible.pdf"), "2u", true)
	claims.PDFUA, claims.Lang = nil, ""
	if r := c.ok("inspect", "accessible.pdf"); json.Unmarshal([]byte(r.stdout), &claims) != nil || claims.PDFUA == nil || claims.Lang != "de-DE" {
		t.Errorf("inspect printed %q", r.stdout)
	}
	// The service's 400 for options that exclude each other, named.
	c.wantExit(2, []string{"field: attachments"}, "render", "invoice.html", "-o", "no.pdf", "--pdfa", "2b", "--attach", "lines.csv")

	// Options, flags after the argument.
	c.ok("render", "report.html", "-o", "letter.pdf", "--option", "format=Letter", "--option", "margin.top=2cm",
		"--option", "metadata.title=CLI title", "--option", "printBackground=false")
	conversions++
	pi := info(t, c.read("letter.pdf"))
	if pi.Pages != 2 || !near(pi.Width, 612, 1) || !near(pi.Height, 792, 1) {
		t.Errorf("letter.pdf %+v, want 2 Letter pages", pi)
	}
	if out := run(t, "pdfinfo", filepath.Join(c.dir, "letter.pdf")); !strings.Contains(out, "CLI title") {
		t.Errorf("title not set:\n%s", out)
	}

	// The same render with an Idempotency-Key, twice: one render, one
	// charge, the same bytes (DESIGN §4.20).
	c.ok("render", "report.html", "-o", "keyed-1.pdf", "--idempotency-key", "cli-report-1")
	c.ok("render", "report.html", "-o", "keyed-2.pdf", "--idempotency-key", "cli-report-1")
	conversions++
	if !bytes.Equal(c.read("keyed-1.pdf"), c.read("keyed-2.pdf")) {
		t.Error("the keyed render run twice wrote different PDFs")
	}
	if used := user.usage(); used != int64(conversions) {
		t.Errorf("conversions used %d after the keyed renders, want %d", used, conversions)
	}

	// A folder: index.html and the image it links by relative path.
	c.write("site/index.html", `<html><body><h1>With an image</h1><img src="img/red.png" style="width:200px"></body></html>`)
	c.write("site/img/red.png", redPNG(t))
	c.write("site/.hidden", "not sent")
	c.ok("render", "site", "-o", "site.pdf")
	conversions++
	if n := pdfImages(t, filepath.Join(c.dir, "site.pdf")); n != 1 {
		t.Errorf("site.pdf holds %d images, want the uploaded asset", n)
	}

	// Hosted: the link on stdout, then files ls and rm.
	r = c.ok("render", "report.html", "--host")
	conversions++
	link := strings.TrimSpace(r.stdout)
	id := link[strings.LastIndex(link, "/")+1:]
	if !strings.HasPrefix(link, svc.URL+"/api/hosted-pdfs/") || id == "" {
		t.Fatalf("hosted render printed %q", r.stdout)
	}
	if r := c.ok("files", "ls"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "document.pdf") {
		t.Errorf("files ls:\n%s", r.stdout)
	}
	var listed struct {
		PDFs  []struct{ PdfID string }
		Total int
	}
	if err := json.Unmarshal([]byte(c.ok("files", "ls", "--json").stdout), &listed); err != nil || listed.Total != 1 || listed.PDFs[0].PdfID != id {
		t.Errorf("files ls --json: %+v %v", listed, err)
	}
	c.ok("files", "rm", id)
	if r := c.ok("files", "ls"); strings.Contains(r.stdout, id) {
		t.Errorf("deleted file still listed:\n%s", r.stdout)
	}
	c.wantExit(2, []string{"404 NOT_FOUND"}, "files", "rm", id)

	// A batch: each .html of the folder, plain progress lines off a terminal.
	for _, n := range []string{"a", "b", "c"} {
		c.write("docs/"+n+".html", "<h1>"+n+"</h1>")
	}
	c.write("docs/notes.txt", "not a document")
	r = c.ok("batch", "docs", "-o", "docs.zip")
	conversions += 3
	if names := zipNames(t, c.read("docs.zip")); strings.Join(names, " ") != "a.pdf b.pdf c.pdf" {
		t.Errorf("docs.zip holds %v", names)
	}
	if !strings.Contains(r.stderr, "rendering: 3/3 completed\n") || strings.Contains(r.stderr, "\r") {
		t.Errorf("batch progress off a terminal:\n%q", r.stderr)
	}

	// The same on a terminal: a bar redrawn in place.
	if master, slave, err := openPTY(); err != nil {
		t.Logf("no pseudo-terminal (%v): the bar is checked by the progress package's tests only", err)
	} else {
		cmd := c.command("batch", "docs", "-o", "docs2.zip")
		cmd.Stderr = slave
		got := make(chan []byte)
		go func() { b, _ := io.ReadAll(master); got <- b }()
		err := cmd.Run()
		slave.Close()
		tty := <-got
		master.Close()
		if err != nil {
			t.Fatalf("batch on a terminal: %v\n%s", err, tty)
		}
		conversions += 3
		if !bytes.Contains(tty, []byte("\r\x1b[Krendering [")) || !bytes.Contains(tty, []byte("3/3 100% completed")) {
			t.Errorf("no progress bar on the terminal:\n%q", tty)
		}
		if len(zipNames(t, c.read("docs2.zip"))) != 3 {
			t.Error("docs2.zip incomplete")
		}
	}

	// Merge: 2 + 2 pages.
	r = c.ok("merge", "report.pdf", "letter.pdf", "-o", "merged.pdf")
	conversions++
	if pi := info(t, c.read("merged.pdf")); pi.Pages != 4 {
		t.Errorf("merged.pdf %+v, want 4 pages", pi)
	}

	// QR code, read back.
	c.ok("qr", "https://example.com/cli", "-o", "qr.png", "--size", "300")
	if got := zbarCodes(t, c.read("qr.png"), 50); len(got) != 1 || got[0] != "https://example.com/cli" {
		t.Errorf("zbarimg read %q", got)
	}

	// Stored templates (DESIGN §9): a folder pushed as a template, rendered
	// by name with data from a file, a version by @N with data on standard
	// input, a batch of JSON Lines rows, the preview of the sample data; a
	// bad row refused locally naming its line, a template error naming the
	// template's line and the data's path.
	c.write("tpl/index.html", invoiceTemplate)
	c.write("tpl/style.css", "h1 { color: #2a6 }")
	c.write("tpl-sample.json", `{"number":"S-1","customer":{"name":"Sample GmbH"},"items":[],"date":"2026-01-05"}`)
	r = c.ok("template", "push", "invoice", "tpl", "--sample-data", "tpl-sample.json")
	tplID := strings.TrimSpace(r.stdout)
	if !strings.Contains(r.stderr, "stored invoice version 1") || tplID == "" {
		t.Fatalf("template push: %q %q", r.stdout, r.stderr)
	}
	c.write("tpl2/index.html", strings.Replace(invoiceTemplate, "Rechnung", "Faktura", 2))
	c.ok("template", "push", "invoice", "tpl2")
	if r := c.ok("template", "ls"); !strings.Contains(r.stdout, tplID) || !strings.Contains(r.stdout, "invoice") {
		t.Errorf("template ls:\n%s", r.stdout)
	}
	inv7 := `{"number":"2026-007","customer":{"name":"<b>Müller</b> & Söhne"},"items":[{"name":"Beratung","price":1234.5}],"date":"2026-03-01"}`
	c.write("inv-7.json", inv7)
	r = c.ok("render", "--template", "invoice", "--data", "inv-7.json")
	conversions++
	if !strings.Contains(r.stderr, "wrote inv-7.pdf") {
		t.Errorf("render --template said %q", r.stderr)
	}
	text := pdfText(t, c.read("inv-7.pdf"))
	for _, want := range []string{"Faktura 2026-007", "<b>Müller</b> & Söhne", "Beratung", "1.234,50 €", "1 März 2026"} {
		if !strings.Contains(text, want) {
			t.Errorf("inv-7.pdf lacks %q:\n%s", want, text)
		}
	}
	cmd := c.command("render", "--template", "invoice@1", "--data", "-", "-o", "v1.pdf")
	cmd.Stdin = strings.NewReader(inv7)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("render --template invoice@1 --data -: %v\n%s", err, out)
	}
	conversions++
	if text := pdfText(t, c.read("v1.pdf")); !strings.Contains(text, "Rechnung 2026-007") {
		t.Errorf("v1.pdf is not version 1:\n%s", text)
	}
	c.write("rows.jsonl", `{"data":{"number":"B-1","items":[]},"fileName":"b1"}`+"\n\n"+
		`{"data":{"number":"B-2","items":[]},"options":{"pageRanges":"1"}}`+"\n")
	c.ok("batch", "--template", "invoice@1", "rows.jsonl", "-o", "rows.zip")
	conversions += 2
	names, files := unzip(t, c.read("rows.zip"))
	if len(names) != 2 {
		t.Errorf("rows.zip holds %v", names)
	}
	for i, n := range []string{"b1.pdf", "invoice-2.pdf"} {
		if text := pdfText(t, files[n]); !strings.Contains(text, fmt.Sprintf("Rechnung B-%d", i+1)) {
			t.Errorf("rows.zip %s:\n%s", n, text)
		}
	}
	c.write("bad-rows.jsonl", `{"data":{"number":"B-1"}}`+"\n"+`{"number":"B-2"}`+"\n")
	c.wantExit(2, []string{"bad-rows.jsonl line 2", `unknown key "number"`}, "batch", "--template", "invoice", "bad-rows.jsonl")
	c.ok("template", "preview", tplID, "--version", "1", "-o", "preview.pdf")
	conversions++
	if text := pdfText(t, c.read("preview.pdf")); !strings.Contains(text, "Rechnung S-1") || !strings.Contains(text, "Sample GmbH") {
		t.Errorf("preview.pdf:\n%s", text)
	}
	c.write("wrong.json", `{"number":"X","items":[{"name":"a","price":1},{"name":"b","price":"lots"}]}`)
	c.wantExit(2, []string{"[422 RENDER_CHECK_FAILED]", "template line 5, data items[1].price"},
		"render", "--template", "invoice", "--data", "wrong.json", "-o", "wrong.pdf")
	c.wantExit(2, []string{"404 NOT_FOUND"}, "render", "--template", "nope", "-o", "nope.pdf")

	// Usage counts what this test rendered.
	if r := c.ok("usage"); !strings.Contains(r.stdout, "conversions") || !strings.Contains(r.stdout, "hobby") {
		t.Errorf("usage:\n%s", r.stdout)
	}
	var u struct{ ConversionsUsed, HostedCount int }
	if err := json.Unmarshal([]byte(c.ok("usage", "--json").stdout), &u); err != nil || u.ConversionsUsed != conversions || u.HostedCount != 0 {
		t.Errorf("usage --json %+v %v, want %d conversions and no hosted file", u, err, conversions)
	}

	// Failures, each with its exit code and a readable message.
	c.wantExit(2, []string{"scale", "[400 BAD_REQUEST]", "field: scale"}, "render", "report.html", "--option", "scale=5")
	c.wantExit(1, []string{"want key=value"}, "render", "report.html", "--option", "scale")
	c.wantExit(1, []string{"unknown command"}, "frobnicate")
	c.wantExit(1, []string{"flag provided but not defined"}, "render", "report.html", "--nope")
	c.wantExit(2, []string{"no such file"}, "render", "missing.html")
	c.wantExit(2, []string{"No HTML file found", "received: notes.txt"}, "render", "docs/notes.txt")
	bad := &cli{t: t, bin: c.bin, dir: c.dir, env: map[string]string{"DOCRENDER_URL": svc.URL}}
	bad.wantExit(3, []string{"DOCRENDER_API_KEY"}, "render", "report.html")
	bad.wantExit(3, []string{"DOCRENDER_SESSION"}, "files", "ls")
	bad.env["DOCRENDER_API_KEY"] = "drk_" + strings.Repeat("x", 40)
	bad.wantExit(3, []string{"Invalid or expired API key.", "[401 UNAUTHORIZED]"}, "qr", "x")
	bad.env["DOCRENDER_URL"] = "http://" + freePort(t)
	bad.wantExit(6, []string{"cannot reach the service"}, "qr", "x")
}
