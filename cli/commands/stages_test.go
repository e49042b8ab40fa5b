package commands

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// --stages (DESIGN §11) is sent as the option stages by every command
// whose output is a PDF, as given (numbers as written; [] is a list of no
// step), inline or from @FILE; render's --toc and --split are the options
// toc and split (--split=auto leaves split to the service, over an
// --option). What is not a list of objects is refused before anything is
// sent, as is --stages on text and images, which make no PDF.
func TestStagesFlag(t *testing.T) {
	var mu sync.Mutex
	var sent []string // "path options"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.URL.Path+" "+r.FormValue("options"))
		mu.Unlock()
		w.Write([]byte("%PDF ok"))
	}))
	defer srv.Close()
	last := func() (string, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(sent) == 0 {
			return "", 0
		}
		return sent[len(sent)-1], len(sent)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	page := write("index.html", "<h1>x</h1>")
	pdf := write("in.pdf", "%PDF-1.7")
	docx := write("letter.docx", "PK")
	const steps = `[{"op":"watermark","text":"DRAFT","fontSize":40,"opacity":0.25},{"op":"pdfa","level":"2b"}]`
	// Sent with the keys of each step in order (encoding/json sorts them).
	const sentSteps = `[{"fontSize":40,"op":"watermark","opacity":0.25,"text":"DRAFT"},{"level":"2b","op":"pdfa"}]`
	file := write("steps.json", "\n"+steps+"\n")
	out := filepath.Join(dir, "out")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"render", page, "--toc", "--split", "--stages", steps}, `/pdf/generate {"split":true,"stages":` + sentSteps + `,"toc":true}`},
		{[]string{"render", page, "--split=false", "--stages", "@" + file}, `/pdf/generate {"split":false,"stages":` + sentSteps + `}`},
		{[]string{"render", page, "--option", "split=true", "--split=auto"}, `/pdf/generate `},
		{[]string{"render", page, "--option", `stages=[{"op":"pdfua"}]`, "--stages", "[]"}, `/pdf/generate {"stages":[]}`},
		{[]string{"merge", pdf, pdf, "--stages", steps}, `/pdf/merge {"stages":` + sentSteps + `}`},
		{[]string{"office", docx, "--stages", steps}, `/pdf/office {"stages":` + sentSteps + `}`},
		{[]string{"split", pdf, "--every", "1", "--stages", steps}, `/pdf/split {"every":1,"stages":` + sentSteps + `}`},
		{[]string{"pages", pdf, "--select", "1", "--stages", steps}, `/pdf/pages {"select":"1","stages":` + sentSteps + `}`},
		{[]string{"flatten", pdf, "--stages", "@" + file}, `/pdf/flatten {"stages":` + sentSteps + `}`},
		{[]string{"optimize", pdf, "--stages", steps}, `/pdf/optimize {"stages":` + sentSteps + `}`},
		{[]string{"metadata", pdf, "--title", "T", "--keywords", "a, b", "--stages", `[{"op":"encrypt","ownerPassword":"o"}]`},
			`/pdf/metadata {"metadata":{"title":"T","keywords":["a","b"]},"stages":[{"op":"encrypt","ownerPassword":"o"}]}`},
	} {
		os.Remove(out)
		code, _, errOut := runCLI(context.Background(), srv.URL, withKey, append(tc.args, "-o", out)...)
		if code != ExitOK {
			t.Errorf("%q: exit %d: %s", tc.args, code, errOut)
			continue
		}
		if got, _ := last(); got != tc.want {
			t.Errorf("%q: sent\n %s\nwant\n %s", tc.args, got, tc.want)
		}
	}

	// A batch sends them in its options.
	rs := &recordServer{}
	rsrv := httptest.NewServer(rs)
	defer rsrv.Close()
	os.Mkdir(filepath.Join(dir, "docs"), 0o755)
	write("docs/one.html", "<p>1</p>")
	os.Remove(out)
	if code, _, errOut := runCLI(context.Background(), rsrv.URL, withKey, "batch", filepath.Join(dir, "docs"), "-o", out, "--progress", "none", "--stages", steps); code != ExitOK {
		t.Fatalf("batch: exit %d: %s", code, errOut)
	}
	if opts, _ := rs.sent(t); !strings.Contains(opts, `"options":{"stages":`+sentSteps+`}`) {
		t.Errorf("batch sent %s", opts)
	}

	// Mistakes, before anything is sent.
	write("bad.json", `{"op":"pdfa"}`)
	_, before := last()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"render", page, "--stages", `{"op":"pdfa","level":"2b"}`}, ExitUsage, "--stages: want a JSON list of steps"},
		{[]string{"render", page, "--stages", `[{"op":"pdfa"}] [`}, ExitUsage, "something follows the list"},
		{[]string{"merge", pdf, "--stages", `[{"op":"pdfa"},1]`}, ExitUsage, "step 2 is not an object"},
		{[]string{"office", docx, "--stages", `[{"op":`}, ExitUsage, "--stages: want a JSON list"},
		{[]string{"flatten", pdf, "--stages", "[null]"}, ExitUsage, "step 1 is not an object"},
		{[]string{"flatten", pdf, "--stages", "[]", "--stages", "[]"}, ExitUsage, "given twice"},
		{[]string{"split", pdf, "--every", "1", "--stages", "@" + filepath.Join(dir, "nope.json")}, ExitInput, "nope.json"},
		{[]string{"pages", pdf, "--select", "1", "--stages", "@" + filepath.Join(dir, "bad.json")}, ExitInput, "bad.json: want a JSON list"},
		{[]string{"text", pdf, "--stages", steps}, ExitUsage, "-stages"},
		{[]string{"images", pdf, "--stages", steps}, ExitUsage, "-stages"},
		{[]string{"render", page, "--split=maybe"}, ExitUsage, "want true, false or auto"},
		{[]string{"metadata", pdf, "--stages", steps}, ExitUsage, "at least one of --title"},
	} {
		code, _, errOut := runCLI(context.Background(), srv.URL, withKey, append(tc.args, "-o", out)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if _, after := last(); after != before {
		t.Errorf("%d requests sent for refused command lines", after-before)
	}

	// The help of each command says what it takes.
	for cmd, want := range map[string][]string{
		"render":   {"--toc", "--split=false", "--stages JSON", "@FILE.json"},
		"merge":    {"--stages JSON"},
		"office":   {"--stages JSON"},
		"batch":    {"--stages JSON"},
		"split":    {"--stages JSON", "each part"},
		"pages":    {"--stages JSON"},
		"flatten":  {"--stages JSON"},
		"optimize": {"--stages JSON"},
		"metadata": {"--title", "--stages JSON"},
	} {
		_, help, _ := runCLI(context.Background(), srv.URL, nil, "help", cmd)
		for _, w := range want {
			if !strings.Contains(help, w) {
				t.Errorf("help %s lacks %q", cmd, w)
			}
		}
	}
	for _, cmd := range []string{"text", "images"} {
		if _, help, _ := runCLI(context.Background(), srv.URL, nil, "help", cmd); strings.Contains(help, "--stages") {
			t.Errorf("help %s offers --stages", cmd)
		}
	}
}
