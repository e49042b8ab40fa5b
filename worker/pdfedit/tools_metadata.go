package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// SetMetadata writes in to w with the metadata of info (POST
// /pdf/metadata) in both places readers look: the Info dictionary, as
// SetInfo writes it (fields left empty keep what the document has), and a
// new XMP packet that says the same (dc:title, dc:creator, dc:description,
// pdf:Keywords, xmp:CreatorTool, pdf:Producer, xmp:CreateDate and
// ModifyDate), replacing the document's. SetInfo alone leaves an older XMP
// packet contradicting Info, and readers that prefer XMP show the old
// title.
//
// The PDF/A, PDF/UA and Factur-X claims of the old packet are said again,
// so a conforming document stays one: PDF/A wants Info and XMP to agree,
// which this keeps. pdfcpu stamps Info's CreationDate and ModDate with the
// second it writes; the packet's dates are that second (the write is
// redone if it crosses into the next, as Finish does).
//
// An unusable PDF is a *BadInputError; cancelling ctx returns ctx's error.
func SetMetadata(ctx context.Context, in io.ReadSeeker, w io.Writer, info *jobspb.DocInfo) error {
	if w == nil {
		return errors.New("pdfedit: set metadata: nil writer")
	}
	data, pc, err := readTool(ctx, in, model.ADDPROPERTIES)
	if err != nil {
		return err
	}
	entries := infoEntries(info)
	for try := range 3 {
		if try > 0 {
			if pc, err = parseTool(ctx, data, model.ADDPROPERTIES); err != nil {
				return err
			}
		}
		now := time.Now()
		err = safeEdit(pc, func(pc *model.Context) error {
			rec := claims(catalogXMP(pc.XRefTable))
			if len(entries) > 0 {
				if err := setInfo(pc, entries); err != nil {
					return err
				}
			}
			if err := cleanInfo(pc); err != nil {
				return err
			}
			return setXMP(pc, rec, now)
		})
		if err != nil {
			return err
		}
		var out bytes.Buffer
		out.Grow(len(data) + 8<<10)
		if err := save(ctx, pc, &out); err != nil {
			return err
		}
		if sameSecond(out.Bytes(), pc, now) {
			_, err := w.Write(out.Bytes())
			return err
		}
	}
	return errors.New("pdfedit: set metadata: the write kept crossing a second: Info and XMP dates differ")
}

// claims reads the conformance claims of an XMP packet that setXMP can
// say again.
func claims(xmp string) *jobspb.Record {
	rec := &jobspb.Record{}
	if xmp == "" {
		return rec
	}
	part, level := xmpValue(xmp, "pdfaid", "part"), strings.ToLower(xmpValue(xmp, "pdfaid", "conformance"))
	if len(part) == 1 && part >= "1" && part <= "4" && len(level) == 1 && strings.Contains("abu", level) {
		rec.Pdfa = part + level
	}
	rec.Pdfua = xmpValue(xmp, "pdfuaid", "part") == "1"
	// buildXMP names the invoice's file from the profile: a claim naming
	// another file (ZUGFeRD's) is not repeated rather than misstated.
	if p := xmpValue(xmp, "fx", "ConformanceLevel"); p != "" && xmpValue(xmp, "fx", "DocumentFileName") == pdfopts.EInvoiceFileName(p) {
		rec.Einvoice = &jobspb.EInvoice{Profile: p}
	}
	return rec
}
