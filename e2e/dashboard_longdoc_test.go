package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDashboardTryLongDoc: the render form's controls for long documents
// (DESIGN §10: toc, split) and for steps in the caller's order (§11:
// stages), in headless Chromium under the page's CSP. A page with
// <nav data-toc> rendered with the table-of-contents box ticked and a
// metadata step downloads as a PDF whose first page lists the headings
// with their pages and whose title is the step's; "always in slices"
// prints a ledger in slices (the report says so); a stages list the
// service refuses shows its message naming stages[i].op; text that is not
// JSON, or not a list, is refused in the page before anything is sent.
// No script error.
func TestDashboardTryLongDoc(t *testing.T) {
	svc := sharedService(t)
	d := openDashboard(t, svc)
	p := d.p
	d.signUp("longdoc")
	write := tempWriter(t)
	dl := t.TempDir()
	download := func(name string) []byte {
		t.Helper()
		d.waitJS(time.Minute, `(n) => document.getElementById('render-link').textContent.startsWith('Download ' + n + ' (')`, name)
		wait := d.b.WaitDownload(dl)
		p.MustElement("#render-link").MustClick()
		got := wait()
		pdf, err := os.ReadFile(filepath.Join(dl, got.GUID))
		if err != nil {
			t.Fatal(err)
		}
		return pdf
	}
	conversions := func() int {
		return p.MustEval(`async () => (await (await fetch('/api/billing/usage', {credentials: 'same-origin'})).json()).data.conversionsUsed`).Int()
	}

	// A table of contents, and a step of the caller's.
	p.MustElement("#render-files").MustSetFiles(write("index.html", []byte(refsHTML)))
	p.MustElement("#render-options").MustInput(`{"fileName":"refs"}`)
	p.MustElement("#render-toc").MustClick()
	p.MustElement("#render-stages").MustInput(`[{"op":"metadata","title":"Contents from the form"}]`)
	p.MustElement("#render-submit").MustClick()
	pdf := download("refs.pdf")
	if got := p.MustElement("#render-summary").MustText(); !strings.Contains(got, "pages=4,") || !strings.Contains(got, "passes=2") {
		t.Errorf("the render summary says %q, want pages=4 and passes=2", got)
	}
	p1 := pageText(t, pdf, 1)
	for _, want := range []string{`Contents +1\n`, `Chapter One +2\n`, `Chapter Two +3\n`, `Part Two B +3\n`, `Chapter Three +4\n`, `Part Three A +4\n`} {
		if !regexp.MustCompile(want).MatchString(p1) {
			t.Errorf("page 1 lacks the contents' line %q:\n%s", want, p1)
		}
	}
	if title := pdfInfoFields(t, pdf, "")["Title"]; title != "Contents from the form" {
		t.Errorf("title %q, want the stages' metadata step's", title)
	}

	// Always in slices: a ledger of a dozen pages printed by several render
	// slots and joined.
	p.MustElement("#render-toc").MustClick()
	p.MustElement("#render-stages").MustSelectAllText().MustInput("")
	p.MustElement("#render-split").MustSelect("always: in slices, printed at once and joined")
	p.MustElement("#render-files").MustSetFiles(write("ledger.html", []byte(splitLedger(6))))
	p.MustElement("#render-options").MustSelectAllText().MustInput(`{"fileName":"ledger"}`)
	p.MustElement("#render-submit").MustClick()
	ledger := download("ledger.pdf")
	if got := p.MustElement("#render-summary").MustText(); !strings.Contains(got, "slices=") {
		t.Errorf("the render summary says %q, want slices=", got)
	}
	if n := info(t, ledger).Pages; n < 6 {
		t.Errorf("the ledger has %d pages", n)
	}
	p.MustElement("#render-split").MustSelect("when the document is long (the service's page count)")

	// Steps the service refuses: its message, naming the step, shown as
	// the other errors are; the last PDF's link gone.
	used := conversions()
	p.MustElement("#render-stages").MustInput(`[{"op":"pdfa","level":"2b"},{"op":"watermark","text":"LATE"}]`)
	p.MustElement("#render-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('render-status').className.includes('error')`)
	if got := p.MustElement("#render-status").MustText(); !strings.Contains(got, "stages[1].op") || !strings.Contains(got, "watermark") {
		t.Errorf("the refusal reads %q, want it to name stages[1].op", got)
	}
	if !p.MustElement("#render-result").MustProperty("hidden").Bool() {
		t.Error("a refused render left the last PDF's link on screen")
	}
	p.MustElement("#render-stages").MustSelectAllText().MustInput(`[{"op":"zip"}]`)
	p.MustElement("#render-submit").MustClick()
	d.waitJS(30*time.Second, `() => document.getElementById('render-status').textContent.includes('stages[0].op')`)

	// Not JSON, or not a list: refused in the page, nothing sent.
	for stages, want := range map[string]string{
		`[{"op":"pdfa"`:   "Stages are not valid JSON",
		`{"op":"pdfa"}`:   "Stages must be a JSON list",
		`"watermark"`:     "Stages must be a JSON list",
		`[{'op':'pdfa'}]`: "Stages are not valid JSON",
	} {
		p.MustEval(`() => { document.getElementById('render-status').textContent = '' }`)
		p.MustElement("#render-stages").MustSelectAllText().MustInput(stages)
		p.MustElement("#render-submit").MustClick()
		d.waitJS(5*time.Second, `(w) => document.getElementById('render-status').textContent.startsWith(w)`, want)
	}
	if got := conversions(); got != used {
		t.Errorf("conversions %d after refusals, want %d", got, used)
	}
	if problems := d.takeProblems(); len(problems) > 0 {
		t.Errorf("the page reported %q", problems)
	}
}
