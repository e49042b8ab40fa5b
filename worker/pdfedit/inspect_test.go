package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
)

// What Chromium prints is reported as poppler sees it: pages, size,
// tagged, language, embedded fonts, producer.
func TestInspectChromiumPDF(t *testing.T) {
	r, err := Inspect(context.Background(), "chromium.pdf", bytes.NewReader(chromiumPDF(t)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Pages < 1 || len(r.PageSizes) != int(r.Pages) || !r.Tagged || r.Encrypted || r.Lang != "en-US" || r.PdfVersion != "1.4" {
		t.Fatalf("report %+v", r)
	}
	// As pdfinfo and pdffonts read testdata/chromium.pdf: 2 Letter pages,
	// two embedded subsets of Liberation Sans.
	if p := r.PageSizes[0]; r.Pages != 2 || p.Width != 612 || p.Height != 792 {
		t.Errorf("%d pages, the first %vx%v, want 2 of 612x792", r.Pages, p.Width, p.Height)
	}
	var names []string
	for _, f := range r.Fonts {
		names = append(names, f.Name)
		if !f.Embedded {
			t.Errorf("font %s not embedded", f.Name)
		}
	}
	if strings.Join(names, ",") != "AAAAAA+LiberationSans-Bold,BAAAAA+LiberationSans" {
		t.Errorf("fonts %v", names)
	}
	if r.Metadata["producer"] == "" || r.PdfaPart != "" || r.PdfuaPart != "" || len(r.Attachments) != 0 {
		t.Errorf("report %+v", r)
	}
}

// The PDF/A and PDF/UA claims come from the XMP metadata, in either of
// the forms XMP allows; embedded files with their relationship.
func TestInspectClaimsAndAttachments(t *testing.T) {
	for _, tc := range []struct{ xmp, part, conf, ua string }{
		{`<rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/" pdfaid:part="3" pdfaid:conformance="B"/>`, "3", "B", ""},
		{`<rdf:Description rdf:about=""><pdfaid:part>2</pdfaid:part><pdfaid:conformance>U</pdfaid:conformance><pdfuaid:part>1</pdfuaid:part></rdf:Description>`, "2", "U", "1"},
	} {
		dir := t.TempDir()
		att := filepath.Join(dir, "factur-x.xml")
		if err := os.WriteFile(att, []byte("<rsm:CrossIndustryInvoice/>"), 0o600); err != nil {
			t.Fatal(err)
		}
		var withFile bytes.Buffer
		if err := api.AddAttachments(bytes.NewReader(chromiumPDF(t)), &withFile, []string{att}, false, newConf(model.ADDATTACHMENTS)); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		xmp := `<?xpacket begin=""?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">` + tc.xmp + `</rdf:RDF></x:xmpmeta><?xpacket end="w"?>`
		err := rewrite(context.Background(), bytes.NewReader(withFile.Bytes()), &out, newConf(model.ADDATTACHMENTS), func(pc *model.Context) error {
			sd, err := pc.XRefTable.NewStreamDictForBuf([]byte(xmp))
			if err != nil {
				return err
			}
			sd.InsertName("Type", "Metadata")
			sd.InsertName("Subtype", "XML")
			if err := sd.Encode(); err != nil {
				return err
			}
			ir, err := pc.XRefTable.IndRefForNewObject(*sd)
			if err != nil {
				return err
			}
			pc.RootDict["Metadata"] = *ir
			for _, e := range pc.XRefTable.Table {
				if d, ok := e.Object.(types.Dict); ok && d.NameEntry("Type") != nil && *d.NameEntry("Type") == "Filespec" {
					d["AFRelationship"] = types.Name("Alternative")
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Inspect(context.Background(), "x.pdf", bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if r.PdfaPart != tc.part || r.PdfaConformance != tc.conf || r.PdfuaPart != tc.ua {
			t.Errorf("claims %q %q %q, want %q %q %q", r.PdfaPart, r.PdfaConformance, r.PdfuaPart, tc.part, tc.conf, tc.ua)
		}
		if len(r.Attachments) != 1 || r.Attachments[0].FileName != "factur-x.xml" || r.Attachments[0].Relationship != "Alternative" {
			t.Errorf("attachments %v", r.Attachments)
		}
	}
}

// A PDF that opens only with its password reports that alone; a file that
// is not a PDF is the client's fault, named.
func TestInspectEncryptedAndBad(t *testing.T) {
	var locked bytes.Buffer
	if err := Encrypt(context.Background(), bytes.NewReader(chromiumPDF(t)), &locked, &jobspb.Encryption{UserPassword: "u", OwnerPassword: "o"}); err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(context.Background(), "locked.pdf", bytes.NewReader(locked.Bytes()))
	if err != nil || !r.Encrypted || r.Pages != 0 {
		t.Fatalf("locked: %+v %v", r, err)
	}
	var ownerOnly bytes.Buffer
	if err := Encrypt(context.Background(), bytes.NewReader(chromiumPDF(t)), &ownerOnly, &jobspb.Encryption{OwnerPassword: "o", AllowPrinting: true}); err != nil {
		t.Fatal(err)
	}
	if r, err := Inspect(context.Background(), "owner.pdf", bytes.NewReader(ownerOnly.Bytes())); err != nil || !r.Encrypted || r.Pages < 1 {
		t.Fatalf("owner password only: %+v %v", r, err)
	}
	var bad *BadInputError
	if _, err := Inspect(context.Background(), "notes.txt", bytes.NewReader([]byte("hello"))); !errors.As(err, &bad) || bad.Name != "notes.txt" {
		t.Fatalf("not a PDF: %v", err)
	}
	if _, err := Inspect(context.Background(), "cut.pdf", bytes.NewReader(chromiumPDF(t)[:600])); !errors.As(err, &bad) {
		t.Fatalf("truncated: %v", err)
	}
}

// A font whose program is not in the file is reported so: the text
// watermark's Helvetica (pdffonts: "emb no"), which a PDF/A must not have.
func TestInspectUnembeddedFont(t *testing.T) {
	var out bytes.Buffer
	wm := &jobspb.Watermark{Text: "DRAFT", FontSize: 48, Color: "#888888", Opacity: 0.3, Rotation: 45, Position: "center", Pages: "all"}
	if err := Watermark(context.Background(), bytes.NewReader(chromiumPDF(t)), &out, wm); err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(context.Background(), "draft.pdf", bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range r.Fonts {
		if f.Name == "Helvetica" {
			found = true
			if f.Embedded {
				t.Error("Helvetica reported embedded")
			}
		} else if !f.Embedded {
			t.Errorf("%s reported not embedded", f.Name)
		}
	}
	if !found {
		t.Errorf("fonts %v: no Helvetica", r.Fonts)
	}
}
