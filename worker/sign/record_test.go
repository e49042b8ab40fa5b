package sign

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/pdfcheck"
	"github.com/docrender/docrender/worker/pdfedit"
)

// TestSignRecord: a signature, visible or not, made inside pdfedit.Finish
// as the worker makes it, keeps a PDF/A-2u + PDF/UA-1 document conformant
// for pdfcheck (6.1.13-3, 6.3, 6.4.3, 7.18) and B-T for Read.
func TestSignRecord(t *testing.T) {
	p, ids := loadIDs(t)
	srv := tsaServer(t, p)
	for _, vis := range []*jobspb.SignBox{nil, {Page: 1, X: 40, Y: 40, Width: 200, Height: 50}} {
		sig := &jobspb.Signature{Identity: "acme", Reason: "ok", Timestamp: true, Visible: vis}
		rec := &jobspb.Record{Pdfa: "2u", Pdfua: true, Sign: sig}
		out, err := pdfedit.Finish(context.Background(), chromiumPDF(t), pdfedit.RecordSpec{
			Info: &jobspb.DocInfo{Title: "Signed"}, Record: rec,
			Prepare: func(pc *model.Context) error { return Prepare(pc, sig, ids["acme"], time.Now()) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if out, err = Seal(context.Background(), out, sig, ids["acme"], &TSA{URL: srv.URL}); err != nil {
			t.Fatal(err)
		}
		v, err := pdfcheck.Check(out, pdfcheck.Level{PDFA: "2u", PDFUA: true})
		if err != nil || len(v) != 0 {
			t.Errorf("visible %t: %v %v", vis != nil, v, err)
		}
		if f, _ := Read(out); len(f) != 1 || !f[0].Valid || !f[0].CoversWholeDocument || f[0].Level != "B-T" {
			t.Errorf("visible %t: Read %v", vis != nil, f)
		}
	}
}

// TestReadDocTimestamp: a document time stamp (/SubFilter /ETSI.RFC3161,
// the token itself in /Contents) is read as valid at the token's time,
// signed by the TSA, level null; one changed byte makes it not valid.
func TestReadDocTimestamp(t *testing.T) {
	p, ids := loadIDs(t)
	srv := tsaServer(t, p)
	ctx := readPDF(t, chromiumPDF(t))
	sig := &jobspb.Signature{Identity: "acme"}
	if err := Prepare(ctx, sig, ids["acme"], time.Now()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeContext(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	pdf := bytes.Replace(buf.Bytes(), []byte("/SubFilter/ETSI.CAdES.detached"), []byte("/SubFilter/ETSI.RFC3161       "), 1)
	brStart, brEnd, cStart, cEnd, err := findPlaceholders(pdf)
	if err != nil {
		t.Fatal(err)
	}
	br := fmt.Sprintf("[0 %d %d %d", cStart, cEnd, len(pdf)-cEnd)
	copy(pdf[brStart:], br+strings.Repeat(" ", brEnd-brStart-len(br)-1)+"]")
	token, err := (&TSA{URL: srv.URL}).Stamp(context.Background(), append(append([]byte{}, pdf[:cStart]...), pdf[cEnd:]...))
	if err != nil {
		t.Fatal(err)
	}
	hex.Encode(pdf[cStart+1:], token)
	found, _ := Read(pdf)
	if len(found) != 1 || !found[0].Valid || !found[0].CoversWholeDocument || found[0].Level != "" ||
		found[0].Signer != "Docrender Test TSA" || time.Since(found[0].SignedAt) > time.Minute {
		t.Fatalf("Read %v", found)
	}
	pdf[cEnd+10] ^= 1
	if found, _ := Read(pdf); len(found) != 1 || found[0].Valid {
		t.Errorf("changed: Read %v", found)
	}
}
