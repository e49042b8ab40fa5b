package client

import (
	"context"
	"net/http"
	"time"
)

// InspectReport is what POST /pdf/inspect says of a PDF (DESIGN §8).
type InspectReport struct {
	Pages int `json:"pages"`
	// PageSizes are in points, the first 100 pages.
	PageSizes  []PageSize `json:"pageSizes"`
	PDFVersion string     `json:"pdfVersion"`
	Tagged     bool       `json:"tagged"`
	Encrypted  bool       `json:"encrypted"`
	// PDFA is the file's PDF/A claim, nil when it makes none.
	PDFA *PDFAClaim `json:"pdfa"`
	// PDFUA is the file's PDF/UA claim, nil when it makes none.
	PDFUA *PDFUAClaim `json:"pdfua"`
	Lang  string      `json:"lang"`
	// Metadata is the document information: title, author, subject,
	// keywords, creator, producer, creationDate, modDate.
	Metadata    map[string]string `json:"metadata"`
	Fonts       []Font            `json:"fonts"`
	Attachments []Attachment      `json:"attachments"`
	// Signatures are the file's signatures, each checked over the bytes it
	// signs (integrity, not trust in the signer); none for an encrypted file.
	Signatures []SignatureInfo `json:"signatures"`
}

// PageSize is a page's width and height in points.
type PageSize struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// PDFAClaim is a PDF/A part and conformance level, e.g. 3 and B.
type PDFAClaim struct {
	Part        string `json:"part"`
	Conformance string `json:"conformance"`
}

// PDFUAClaim is a PDF/UA part.
type PDFUAClaim struct {
	Part string `json:"part"`
}

// Font is a font the PDF uses, and whether its program is in the file.
type Font struct {
	Name     string `json:"name"`
	Embedded bool   `json:"embedded"`
}

// Attachment is a file embedded in the PDF.
type Attachment struct {
	FileName     string `json:"fileName"`
	Size         int64  `json:"size"`
	MimeType     string `json:"mimeType"`
	Relationship string `json:"relationship"`
}

// SignatureInfo is a signature of an inspected PDF.
type SignatureInfo struct {
	// Signer is the signing certificate's common name (else its subject).
	Signer string `json:"signer"`
	// SignedAt is the time stamp's time (B-T), else the time the signature
	// claims; nil when it claims none.
	SignedAt *time.Time `json:"signedAt"`
	// Level is the PAdES level, "B-B" or "B-T"; empty when the signature
	// is not PAdES.
	Level string `json:"level"`
	// CoversWholeDocument: nothing was added to the file after signing.
	CoversWholeDocument bool `json:"coversWholeDocument"`
	// Valid: the signature verifies over the signed bytes.
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

// Inspect asks what a PDF is and claims (POST /pdf/inspect); it counts no
// conversion and is safe to repeat.
func (c *Client) Inspect(ctx context.Context, pdf Upload) (*InspectReport, error) {
	return getData[*InspectReport](ctx, c, &request{method: http.MethodPost, path: "/pdf/inspect", auth: authKey,
		repeat: safeToRepeat, body: multipartBody(nil, []Upload{pdf})})
}
