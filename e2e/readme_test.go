package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	drclient "github.com/docrender/docrender/client"
)

// readmeBlock is one fenced shell example of README.md.
type readmeBlock struct {
	// Line is the line of the opening fence, from 1.
	Line int
	Body string
	// Skip is the reason a readme-test: skip comment gave; "" means the test runs it.
	Skip string
}

var (
	readmeDirectiveRe = regexp.MustCompile(`^<!--\s*readme-test:(.*?)-->$`)
	readmeSkipRe      = regexp.MustCompile(`^\s*skip\s*(?:—|–|-|:)?\s*(.*?)\s*$`)
	// readmeShell are the fence languages whose blocks are commands to run.
	readmeShell = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}
)

// readmeShellBlocks returns the shell blocks of a Markdown text in order. A
// block is skipped only when the line before it (blank lines aside) is
// `<!-- readme-test: skip — REASON -->` with a reason; a marker anywhere
// else, a marker without a reason, an unknown directive, a fence without a
// language (it could hide an example) or an unterminated fence is an error,
// so no example escapes the test unnoticed.
func readmeShellBlocks(md string) ([]readmeBlock, error) {
	lines := strings.Split(md, "\n")
	var blocks []readmeBlock
	skip, skipLine := "", 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := readmeDirectiveRe.FindStringSubmatch(l); m != nil {
			if skipLine != 0 {
				return nil, fmt.Errorf("line %d: a second readme-test comment before a block (first at line %d)", i+1, skipLine)
			}
			sm := readmeSkipRe.FindStringSubmatch(m[1])
			if sm == nil {
				return nil, fmt.Errorf("line %d: unknown readme-test directive %q (want skip — REASON)", i+1, strings.TrimSpace(m[1]))
			}
			if sm[1] == "" {
				return nil, fmt.Errorf("line %d: readme-test: skip gives no reason", i+1)
			}
			skip, skipLine = sm[1], i+1
			continue
		}
		if strings.HasPrefix(l, "<!--") && strings.Contains(l, "readme-test") {
			return nil, fmt.Errorf("line %d: malformed readme-test comment %q (one line: <!-- readme-test: skip — REASON -->)", i+1, l)
		}
		if strings.HasPrefix(l, "```") {
			lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(l, "```")), " ")
			if lang == "" {
				return nil, fmt.Errorf("line %d: a fence without a language: say sh (run by TestReadme) or text", i+1)
			}
			end := i + 1
			for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
				end++
			}
			if end == len(lines) {
				return nil, fmt.Errorf("line %d: the fence is never closed", i+1)
			}
			if readmeShell[lang] {
				blocks = append(blocks, readmeBlock{Line: i + 1, Body: strings.Join(lines[i+1:end], "\n"), Skip: skip})
			} else if skipLine != 0 {
				return nil, fmt.Errorf("line %d: readme-test: skip before a %s block, which is not run anyway", skipLine, lang)
			}
			skip, skipLine = "", 0
			i = end
			continue
		}
		if l != "" && skipLine != 0 {
			return nil, fmt.Errorf("line %d: readme-test: skip is not just before a shell block", skipLine)
		}
	}
	if skipLine != 0 {
		return nil, fmt.Errorf("line %d: readme-test: skip is not followed by a block", skipLine)
	}
	return blocks, nil
}

func TestReadmeBlocks(t *testing.T) {
	cases := []struct {
		name, md string
		want     []readmeBlock
		err      string
	}{
		{name: "run and skip", md: "# t\n\n```sh\necho a\necho b\n```\n\n<!-- readme-test: skip — starts a server -->\n\n```bash\nmake run\n```\n\n```go\nfmt.Println()\n```\n",
			want: []readmeBlock{{Line: 3, Body: "echo a\necho b"}, {Line: 10, Body: "make run", Skip: "starts a server"}}},
		{name: "hyphen and colon separators", md: "<!-- readme-test: skip - slow -->\n```sh\nx\n```\n<!--readme-test:skip: slow too-->\n```sh\ny\n```",
			want: []readmeBlock{{Line: 2, Body: "x", Skip: "slow"}, {Line: 6, Body: "y", Skip: "slow too"}}},
		{name: "a comment inside a block is the block's", md: "```sh\n<!-- readme-test: skip -->\n```\n",
			want: []readmeBlock{{Line: 1, Body: "<!-- readme-test: skip -->"}}},
		{name: "no reason", md: "<!-- readme-test: skip — -->\n```sh\nx\n```\n", err: "gives no reason"},
		{name: "no reason, no dash", md: "<!-- readme-test: skip -->\n```sh\nx\n```\n", err: "gives no reason"},
		{name: "unknown directive", md: "<!-- readme-test: ignore — x -->\n```sh\nx\n```\n", err: "unknown readme-test directive"},
		{name: "marker then prose", md: "<!-- readme-test: skip — x -->\nsome words\n```sh\nx\n```\n", err: "not just before a shell block"},
		{name: "marker at the end", md: "<!-- readme-test: skip — x -->\n", err: "not followed by a block"},
		{name: "marker before a non-shell block", md: "<!-- readme-test: skip — x -->\n```json\n{}\n```\n", err: "which is not run anyway"},
		{name: "two markers", md: "<!-- readme-test: skip — x -->\n<!-- readme-test: skip — y -->\n```sh\nx\n```\n", err: "a second readme-test comment"},
		{name: "multi-line marker", md: "<!-- readme-test: skip —\n  x -->\n```sh\nx\n```\n", err: "malformed readme-test comment"},
		{name: "untagged fence", md: "```\nmake run\n```\n", err: "without a language"},
		{name: "unterminated", md: "```sh\nmake run\n", err: "never closed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readmeShellBlocks(c.md)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("blocks\n%+v\nwant\n%+v", got, c.want)
			}
		})
	}
}

// The account README.md's reader makes in the dashboard, and the key
// placeholder its CLI example exports.
const (
	readmeDashboardEmail    = "you@example.com"
	readmeDashboardPassword = "typed at the login prompt"
	readmeKeyPlaceholder    = "drk_..."
)

// TestReadme runs every shell example of README.md, in order, in one bash
// session (set -euo pipefail, state carried from block to block as in a
// reader's terminal) in an empty folder, against a service of its own: the
// curl session, the print options and the first-five-minutes CLI session.
// Blocks marked `<!-- readme-test: skip — REASON -->` are left out (make run,
// make test, make build, processes of a scaled-out deployment). What the test
// changes is what a reader's machine differs in: localhost:8080 is the
// service's address, bin/docrender is the command built from cli/, and the
// key the reader copies from the dashboard (drk_...) is one made for the
// same account through the same API calls the dashboard makes
// (TestDashboardInBrowser drives the page itself); the password `login` asks
// for arrives on standard input, as typed. Standard error is a
// pseudo-terminal, so the batch draws its progress bar. After the run, the
// files and output each example promises are checked.
func TestReadme(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeShellBlocks(string(md))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, tool := range []string{"bash", "curl", "sed", "pdfinfo", "pdftoppm", "zbarimg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by README.md's examples (scripts/setup installs it): %v", tool, err)
		}
	}

	svc := startService(t, nil)
	ctx := context.Background()
	dash, err := drclient.New(svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dash.Register(ctx, readmeDashboardEmail, readmeDashboardPassword); err != nil {
		t.Fatalf("sign up as the dashboard does: %v", err)
	}
	key, err := dash.CreateKey(ctx, "laptop", nil)
	if err != nil {
		t.Fatalf("create a key as the dashboard does: %v", err)
	}

	addr := strings.TrimPrefix(svc.URL, "http://")
	rewrite := strings.NewReplacer("localhost:8080", addr, readmeKeyPlaceholder, key.Key)
	var script strings.Builder
	script.WriteString("set -euo pipefail\nreadme_line=0\n")
	script.WriteString(`trap 'rc=$?; [ "$rc" = 0 ] || echo "README.md:$readme_line: this example failed (exit $rc)" >&2' EXIT` + "\n")
	ran, placeholder := 0, false
	for _, b := range blocks {
		if b.Skip != "" {
			t.Logf("README.md:%d: skipped: %s", b.Line, b.Skip)
			continue
		}
		ran++
		placeholder = placeholder || strings.Contains(b.Body, readmeKeyPlaceholder)
		body := rewrite.Replace(b.Body)
		if strings.Contains(body, "localhost") {
			t.Fatalf("README.md:%d: an address the test does not point at its service:\n%s", b.Line, b.Body)
		}
		fmt.Fprintf(&script, "readme_line=%d\n%s\n", b.Line, body)
	}
	if ran == 0 || !placeholder {
		t.Fatalf("README.md: %d shell blocks run, dashboard key placeholder %q found: %v; update TestReadme with the README", ran, readmeKeyPlaceholder, placeholder)
	}
	scriptPath := filepath.Join(t.TempDir(), "readme.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// The reader's folder: empty but for bin/docrender.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(buildCLI(t), filepath.Join(dir, "bin", "docrender")); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "bash", scriptPath)
	cmd.Dir = dir
	cmd.WaitDelay = 10 * time.Second
	// Only what a fresh terminal has: no DOCRENDER_* or proxy of the machine leaks in.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	cmd.Stdin = strings.NewReader(readmeDashboardPassword + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	master, slave, ptyErr := openPTY()
	if ptyErr != nil {
		t.Logf("no pseudo-terminal (%v): the progress bar is not checked", ptyErr)
		cmd.Stderr = &stderr
		err = cmd.Run()
	} else {
		cmd.Stderr = slave
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(master); got <- b }()
		err = cmd.Run()
		slave.Close()
		stderr.Write(<-got)
		master.Close()
	}
	out, term := stdout.String(), stderr.String()
	if err != nil {
		t.Fatalf("README.md's examples failed: %v\n--- standard output:\n%s\n--- terminal:\n%s", err, out, strings.ReplaceAll(term, "\r\n", "\n"))
	}
	t.Logf("standard output:\n%s", out)

	file := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("README.md promises %s: %v", name, err)
		}
		return b
	}
	isA4 := func(name string, pdf []byte) {
		t.Helper()
		if pi := info(t, pdf); pi.Pages != 1 || !near(pi.Width, 595, 1) || !near(pi.Height, 842, 1) {
			t.Errorf("%s: %+v, want 1 A4 page", name, pi)
		}
	}

	// First five minutes.
	isA4("index.pdf", file("index.pdf"))
	if got := zbarFile(t, filepath.Join(dir, "site/img/qr.png")); len(got) != 1 || got[0] != "https://example.com/docrender" {
		t.Errorf("site/img/qr.png reads %q", got)
	}
	// The folder's image is in the PDF: the QR code reads back from the printed page.
	page := filepath.Join(t.TempDir(), "site")
	run(t, "pdftoppm", "-r", "150", "-png", "-singlefile", filepath.Join(dir, "site.pdf"), page)
	if got := zbarFile(t, page+".png"); len(got) != 1 || got[0] != "https://example.com/docrender" {
		t.Errorf("site.pdf's page reads %q, want the QR code of site/img", got)
	}
	if names := zipNames(t, file("invoices.zip")); strings.Join(names, " ") != "invoice-1.pdf invoice-2.pdf invoice-3.pdf" {
		t.Errorf("invoices.zip holds %v", names)
	}
	if ptyErr == nil && (!strings.Contains(term, "\r\x1b[Krendering [") || !strings.Contains(term, "3/3 100% completed")) {
		t.Errorf("no progress bar on the terminal:\n%q", term)
	}
	hosted := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(svc.URL) + `/api/hosted-pdfs/(\S+)$`).FindStringSubmatch(out)
	if hosted == nil {
		t.Fatalf("render --host printed no link")
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(hosted[1]) + `\s`).MatchString(out) {
		t.Errorf("files ls does not list the hosted PDF %s", hosted[1])
	}
	for _, want := range []string{`(?m)^plan\s+hobby$`, `(?m)^conversions\s+[1-9]\d* of \d+$`, `(?m)^hosted files\s+1 of \d+$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("usage printed no line matching %s", want)
		}
	}

	// Try it.
	isA4("hello.pdf", file("hello.pdf"))
	if !strings.Contains(out, `"url":"`+svc.URL+`/api/hosted-pdfs/`) {
		t.Errorf("the hosted curl printed no link")
	}
	if got := zbarCodes(t, file("qr.png"), 50); len(got) != 1 || got[0] != "https://example.com" {
		t.Errorf("qr.png reads %q", got)
	}
	// The keyed batch: the whole ZIP, read by curl (DESIGN §4.20).
	if names := zipNames(t, file("statements.zip")); strings.Join(names, " ") != "a.pdf b.pdf" {
		t.Errorf("statements.zip holds %v", names)
	}

	// Print options: locked with the password, and the footer on the page.
	locked := filepath.Join(dir, "locked.pdf")
	if b := file("locked.pdf"); !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Fatalf("locked.pdf is not a PDF: %.300s", b)
	}
	var ee *exec.ExitError
	if err := exec.Command("pdfinfo", locked).Run(); !errors.As(err, &ee) {
		t.Errorf("pdfinfo opened locked.pdf without its password (err %v)", err)
	}
	if txt := run(t, "pdftotext", "-upw", "reader", locked, "-"); !strings.Contains(txt, "Page 1 of 1") {
		t.Errorf("locked.pdf's text lacks its footer:\n%s", txt)
	}
}
