package pdfcheck

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/worker/pdfedit"
)

// hostile are documents built to trip a careless checker: cycles, deep
// nesting, entity declarations, broken cross-references.
func hostile(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	lvl := Level{PDFA: "3u", PDFUA: true}
	baseline := func(t testing.TB, lvl Level) *doc { return small(baseline(t, lvl)) }

	d := baseline(t, lvl) // a structure tree whose elements are their own kids
	d.docElem["K"] = types.Array{d.docElemRef, d.docElemRef}
	d.pElem["K"] = d.docElemRef
	out["cyclic StructTree"] = d.write()

	d = baseline(t, lvl) // a parent tree whose Kids loop
	loop := d.add(nil)
	d.objs[loop.ObjectNumber.Value()] = types.Dict{"Kids": types.Array{loop, loop}}
	d.structRoot()["ParentTree"] = loop
	d.addAnnot("Link", "", nil)["StructParent"] = integer(7)
	out["cyclic ParentTree"] = d.write()

	d = baseline(t, lvl) // a page tree and a form that draws itself
	form := d.add(nil)
	d.objs[form.ObjectNumber.Value()] = stream(types.Dict{"Subtype": name("Form"),
		"Resources": types.Dict{"XObject": types.Dict{"X": form}}}, []byte("/X Do /X Do"))
	d.res["XObject"].(types.Dict)["X"] = form
	d.content += "/X Do\n"
	out["self-drawing form"] = d.write()

	d = baseline(t, lvl) // XMP nested 10000 deep
	d.xmp = strings.Replace(d.xmp, "</rdf:Description>", strings.Repeat("<a>", 10000)+strings.Repeat("</a>", 10000)+"</rdf:Description>", 1)
	out["deep XMP"] = d.write()

	d = baseline(t, lvl) // billion laughs
	d.xmp = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><x:xmpmeta xmlns:x="adobe:ns:meta/">&b;</x:xmpmeta>`
	out["DOCTYPE XMP"] = d.write()

	d = baseline(t, lvl) // deeply nested arrays
	d.cat["Junk"] = nestedArray(5000)
	out["deep arrays"] = d.write()

	good := baseline(t, lvl).write()
	broken := bytes.Clone(good)
	i := bytes.LastIndex(broken, []byte("startxref\n"))
	copy(broken[i+10:], "99999999")
	out["broken xref"] = broken
	out["truncated"] = good[:len(good)/2]
	return out
}

// small replaces the baseline's font program (400 KB) by a stub, for
// seeds a fuzzer can mutate quickly: the checker does not read it.
func small(d *doc) *doc {
	ref := d.fd["FontFile2"].(types.IndirectRef)
	d.objs[ref.ObjectNumber.Value()] = stream(nil, []byte("stub font program"))
	intent := d.objs[d.cat["OutputIntents"].(types.Array)[0].(types.IndirectRef).ObjectNumber.Value()].(types.Dict)
	ref = intent["DestOutputProfile"].(types.IndirectRef)
	d.objs[ref.ObjectNumber.Value()] = stream(types.Dict{"N": integer(3)}, pdfedit.SRGBProfile[:128])
	return d
}

func nestedArray(n int) types.Object {
	var o types.Object = types.Integer(1)
	for range n {
		o = types.Array{o}
	}
	return o
}

// TestHostile: hostile documents are checked quickly, without a panic,
// and reported (the XMP ones as malformed).
func TestHostile(t *testing.T) {
	for name, pdf := range hostile(t) {
		start := time.Now()
		vs, err := Check(pdf, Level{PDFA: "3u", PDFUA: true})
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v", name, d)
		}
		if len(vs) > MaxViolations+1 {
			t.Errorf("%s: %d violations", name, len(vs))
		}
		got := rules(vs)
		t.Logf("%s: %q %v", name, got, err)
		switch name {
		case "deep XMP", "DOCTYPE XMP":
			if len(got) == 0 || got[0] != "6.6.2.1-4" {
				t.Errorf("%s: got %q, want 6.6.2.1-4", name, got)
			}
		}
	}
}

// TestBounded: a flood of violations is cut at MaxViolations, the rest
// counted.
func TestBounded(t *testing.T) {
	d := baseline(t, Level{PDFA: "2b"})
	var a types.Array
	for i := range 500 {
		a = append(a, name(strings.Repeat("n", 128)+string(rune('a'+i%26))), d.add(types.Dict{"S": name("JavaScript")}))
		d.page["Junk"+string(rune('A'+i%26))+strings.Repeat("x", i)] = types.Dict{"S": name("Launch")}
	}
	d.cat["Junk"] = a
	vs, err := Check(d.write(), Level{PDFA: "2b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) > MaxViolations+1 || vs[len(vs)-1].Rule != RuleMore {
		t.Fatalf("%d violations, last %v", len(vs), vs[len(vs)-1])
	}
}

// FuzzCheck: any bytes are checked or refused as unreadable, never a
// panic, within a bounded time.
func FuzzCheck(f *testing.F) {
	for _, pdf := range hostile(f) {
		f.Add(pdf)
	}
	f.Add(small(baseline(f, Level{PDFA: "3u", PDFUA: true})).write())
	f.Add([]byte("%PDF-1.7\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		vs, _ := Check(data, Level{PDFA: "3u", PDFUA: true})
		if len(vs) > MaxViolations+1 {
			t.Fatalf("%d violations", len(vs))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%v", d)
		}
	})
}
