package pdfcheck

import (
	"testing"
)

var allLevels = []Level{{PDFA: "2b"}, {PDFA: "2u"}, {PDFA: "3b"}, {PDFA: "3u"}, {PDFUA: true},
	{PDFA: "2b", PDFUA: true}, {PDFA: "2u", PDFUA: true}, {PDFA: "3b", PDFUA: true}, {PDFA: "3u", PDFUA: true}}

// TestBaseline: the hand-built conformant document passes at every level.
func TestBaseline(t *testing.T) {
	for _, lvl := range allLevels {
		pdf := baseline(t, lvl).write()
		vs, err := Check(pdf, lvl)
		if err != nil {
			t.Fatalf("%+v: %v", lvl, err)
		}
		for _, v := range vs {
			t.Errorf("%+v: %s", lvl, v)
		}
	}
}
