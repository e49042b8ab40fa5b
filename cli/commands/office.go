package commands

import (
	"context"
	"reflect"

	"github.com/docrender/docrender/client"
)

// runOffice is `docrender office FILE ...`: office documents converted by
// the service's LibreOffice (POST /pdf/office).
func runOffice(ctx context.Context, a *app, args []string) error {
	f := newFilesFlags("office")
	merge := f.fs.Bool("merge", false, "")
	landscape := f.fs.Bool("landscape", false, "")
	pageRanges := f.fs.String("page-ranges", "", "")
	pos, m, err := f.parse(args, reflect.TypeFor[client.OfficeOptions](), "office takes the documents to convert, in order")
	if err != nil {
		return err
	}
	// The flags are shorthands for options, as --pdfa is.
	if *merge {
		m["merge"] = true
	}
	if *landscape {
		m["landscape"] = true
	}
	if *pageRanges != "" {
		m["pageRanges"] = *pageRanges
	}
	var req client.OfficeRequest
	if req.Attachments, req.EInvoiceXML, err = f.rec.uploads(); err != nil {
		return err
	}
	if len(m) > 0 {
		req.Options = &client.OfficeOptions{Extra: m}
	}
	if req.Files, err = fileUploads(pos, "a document"); err != nil {
		return err
	}
	def := pdfName(pos[0])
	if len(pos) > 1 && !*merge {
		def = "documents.zip"
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	return a.deliver(*f.host, *f.out, def,
		func() (*client.Hosted, error) { return c.OfficeHosted(ctx, req) },
		func() (*client.Download, error) { return c.Office(ctx, req) })
}
