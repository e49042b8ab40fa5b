package pdfedit

import (
	"os"
	"strings"
	"testing"
)

// TestJoinOutputsAlike compares two joins of the same parts, as
// BenchmarkJoinParts writes them ($DOCRENDER_JOINPARTS_OUT): the pdfcpu
// join's and the lazy join's, given as $DOCRENDER_JOINCMP="a.pdf b.pdf".
// Both pass qpdf --check, have the same pages, the same text on each
// page, the same named destinations on the same pages, the same structure
// tree (shape) and a sound parent tree and IDs. Skipped unless set.
//
//	DOCRENDER_JOINCMP="/tmp/joinparts/1000/before.pdf /tmp/joinparts/1000/after.pdf" go test -run JoinOutputsAlike -timeout 30m ./pdfedit/
func TestJoinOutputsAlike(t *testing.T) {
	files := strings.Fields(os.Getenv("DOCRENDER_JOINCMP"))
	if len(files) != 2 {
		t.Skip("DOCRENDER_JOINCMP not set")
	}
	needTools(t, "qpdf", "pdfinfo", "pdftotext")
	a, b := files[0], files[1]
	checkQPDF(t, b)
	na, nb := pdfinfoPages(t, a), pdfinfoPages(t, b)
	if na != nb {
		t.Fatalf("pages: %d, %d", na, nb)
	}
	ta, tb := run(t, "pdftotext", a, "-"), run(t, "pdftotext", b, "-")
	pa, pb := strings.Split(ta, "\f"), strings.Split(tb, "\f")
	if len(pa) != len(pb) {
		t.Fatalf("text: %d pages, %d", len(pa), len(pb))
	}
	bad := 0
	for i := range pa {
		if pa[i] != pb[i] && bad < 5 {
			bad++
			t.Errorf("page %d: text differs:\n%.300s\n---\n%.300s", i+1, pa[i], pb[i])
		}
	}
	da, db := qpdfJSON(t, readFile(t, a)), qpdfJSON(t, readFile(t, b))
	dpa, dpb := da.destPages(t), db.destPages(t)
	if len(dpa) != len(dpb) {
		t.Errorf("dests: %d, %d", len(dpa), len(dpb))
	}
	for k, v := range dpa {
		if dpb[k] != v {
			t.Errorf("dest %s: page %d, %d", k, v, dpb[k])
		}
	}
	sa, sb := da.structShape(t), db.structShape(t)
	if sa != sb {
		t.Errorf("structure trees differ: %d and %d bytes of shape", len(sa), len(sb))
	}
	t.Logf("structure: %d elements (shape %d bytes), %d dests, %d pages", len(da.objs), len(sa), len(dpa), na)
	db.checkParentTree(t)
	db.checkIDs(t)
	if la, lb := strings.Join(da.linkTargets(t), ","), strings.Join(db.linkTargets(t), ","); la != lb {
		t.Errorf("link targets differ")
	}
}
