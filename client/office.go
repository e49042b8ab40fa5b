package client

import (
	"context"
	"errors"
	"io"
)

// Office documents (DESIGN §11): POST /pdf/office converts Word, Excel,
// PowerPoint, OpenDocument, RTF, text and CSV files with LibreOffice. Each
// file counts one conversion.

// OfficeRequest is the office documents to convert, in order; each file's
// name (its extension) says its format.
type OfficeRequest struct {
	Files   []Upload
	Options *OfficeOptions
	// Attachments and EInvoiceXML: as GenerateRequest's, embedded in each
	// output PDF.
	Attachments []Upload
	EInvoiceXML *Upload
}

// OfficeOptions are the options of an office conversion. The zero value
// of a field leaves the service's default.
type OfficeOptions struct {
	// FileName is the output's name without extension: the PDF's (default:
	// the first file's name) or, for one PDF per file, the ZIP's (default
	// "documents").
	FileName string `json:"fileName,omitempty"`
	UserType string `json:"userType,omitempty"`
	// Landscape turns every page to landscape.
	Landscape bool `json:"landscape,omitempty"`
	// PageRanges are the pages of each document, "1-3,5"; empty: all.
	PageRanges string `json:"pageRanges,omitempty"`
	// Merge makes one PDF of all the files, in order; without it each file
	// is a PDF of its own (a ZIP of them for several files).
	Merge      bool        `json:"merge,omitempty"`
	Watermark  *Watermark  `json:"watermark,omitempty"`
	Metadata   *Metadata   `json:"metadata,omitempty"`
	Encryption *Encryption `json:"encryption,omitempty"`
	// RecordOptions apply to each output PDF (PDF/A-2b and -3b written by
	// LibreOffice itself).
	RecordOptions
	// Extra is sent as more fields of the options object.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the typed fields and then Extra.
func (o OfficeOptions) MarshalJSON() ([]byte, error) {
	type plain OfficeOptions
	return withExtra(plain(o), o.Extra)
}

// Office conversions take no Idempotency-Key (DESIGN §4.20 names generate,
// merge and batch).
func (OfficeRequest) idempotencyKey() string { return "" }

func (r OfficeRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	if len(r.Files) == 0 {
		return nil, errors.New("docrender: office needs at least one document")
	}
	return filesBody(r.Files, r.Options, r.Options == nil, host, recordParts(r.Attachments, r.EInvoiceXML))
}

// Office converts office documents (POST /pdf/office): a PDF for one file
// or with Merge, else a ZIP of one PDF per file (Download.ContentType says
// which). A service without LibreOffice answers a 503 *Error saying why.
func (c *Client) Office(ctx context.Context, r OfficeRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/office", r)
}

// OfficeHosted converts office documents and stores the output behind an
// expiring link (host:true); it returns the link.
func (c *Client) OfficeHosted(ctx context.Context, r OfficeRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/office", r)
}
