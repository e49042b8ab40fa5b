package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestCLIStages (DESIGN §10, §11): the command line's --stages, --toc and
// the metadata command against the service. flatten with a metadata step
// gives the PDF its title (pdfinfo); split runs the steps of @FILE on each
// part, and an attachments step embeds the files of --attach; metadata writes the information and then runs its steps; render
// --toc fills the table of contents (pdftotext of page 1) and runs a step
// of its own. A step the service refuses exits 2 naming stages[i].op; a
// value that is not a list exits 1 before anything is sent.
func TestCLIStages(t *testing.T) {
	svc := sharedService(t)
	user := newClient(t, svc)
	c := &cli{t: t, bin: buildCLI(t), dir: t.TempDir(), env: map[string]string{"DOCRENDER_URL": svc.URL, "DOCRENDER_API_KEY": user.Key}}
	c.write("in.pdf", string(user.generatePDF(threePages, nil)))

	c.ok("flatten", "--stages", `[{"op":"metadata","title":"Staged by the CLI"}]`, "in.pdf")
	flat := c.read("in-flat.pdf")
	if info := pdfInfoFields(t, flat, ""); info["Title"] != "Staged by the CLI" || info["Pages"] != "3" {
		t.Errorf("in-flat.pdf: pdfinfo %v", info)
	}

	c.write("steps.json", `[{"op":"metadata","title":"Part"},{"op":"pdfa","level":"2b"}]`)
	c.ok("split", "in.pdf", "--every", "2", "--stages", "@steps.json")
	names, parts := unzip(t, c.read("in-split.zip"))
	if len(names) != 2 {
		t.Fatalf("in-split.zip holds %v", names)
	}
	for _, n := range names {
		if title := pdfInfoFields(t, parts[n], "")["Title"]; title != "Part" {
			t.Errorf("%s: title %q", n, title)
		}
		if meta := run(t, "pdfinfo", "-meta", writeTemp(t, parts[n], ".pdf")); !strings.Contains(meta, "pdfaid:part") {
			t.Errorf("%s: no PDF/A claim in its XMP", n)
		}
	}

	// An attachments step takes the files of --attach, in every part.
	c.write("data.csv", "a,b\n1,2\n")
	c.ok("split", "in.pdf", "--every", "3", "-o", "attached.zip", "--stages", `[{"op":"attachments"}]`, "--attach", "data.csv")
	_, attached := unzip(t, c.read("attached.zip"))
	for n, part := range attached {
		if list := run(t, "pdfdetach", "-list", writeTemp(t, part, ".pdf")); !strings.Contains(list, "data.csv") {
			t.Errorf("%s: no attachment:\n%s", n, list)
		}
	}

	c.ok("metadata", "in.pdf", "--title", "Reordered", "--author", "CLI", "--stages", `[{"op":"pages","select":"3,1"}]`)
	reordered := c.read("in-metadata.pdf")
	if info := pdfInfoFields(t, reordered, ""); info["Title"] != "Reordered" || info["Author"] != "CLI" || info["Pages"] != "2" {
		t.Errorf("in-metadata.pdf: pdfinfo %v", info)
	}
	if first := pageText(t, reordered, 1); !strings.Contains(first, "PAGETHREE") {
		t.Errorf("in-metadata.pdf page 1: %q", first)
	}

	c.write("refs.html", refsHTML)
	c.ok("render", "refs.html", "--toc", "--stages", `[{"op":"metadata","title":"With contents"}]`)
	refs := c.read("refs.pdf")
	p1 := pageText(t, refs, 1)
	for _, want := range []string{`Chapter One +2\n`, `Part Two B +3\n`, `Chapter Three +4\n`} {
		if !regexp.MustCompile(want).MatchString(p1) {
			t.Errorf("refs.pdf page 1 lacks the contents' line %q:\n%s", want, p1)
		}
	}
	if title := pdfInfoFields(t, refs, "")["Title"]; title != "With contents" {
		t.Errorf("refs.pdf title %q", title)
	}

	used := user.usage()
	c.wantExit(2, []string{"field: stages[1].op", "sign"}, "flatten", "in.pdf", "-o", "refused.pdf",
		"--stages", `[{"op":"sign","identity":"acme"},{"op":"metadata","title":"T"}]`)
	c.wantExit(1, []string{"--stages: want a JSON list"}, "optimize", "in.pdf", "--stages", `{"op":"metadata","title":"T"}`)
	if n := user.usage(); n != used {
		t.Errorf("conversions %d after refusals, want %d", n, used)
	}
}
