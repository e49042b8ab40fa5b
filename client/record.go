package client

// RecordOptions are DESIGN §8's documents of record: PDF/A, PDF/UA, the
// document language, embedded files, a Factur-X / ZUGFeRD e-invoice and a
// PAdES signature. They are part of PrintOptions (generate, a batch's
// options and each of its documents) and of MergeOptions. The service
// refuses fields that exclude each other with a 400 naming one: PDFA with
// Encryption, Sign with Encryption, attachments on a PDF/A-2, an e-invoice
// on a PDF/A-2, PDFUA with Tagged false, PDFUA without a title.
type RecordOptions struct {
	// PDFA is the PDF/A level: PDFA2B, PDFA2U, PDFA3B or PDFA3U (empty:
	// none). Only PDF/A-3 may embed attachments; an e-invoice implies 3b.
	PDFA string `json:"pdfa,omitempty"`
	// PDFUA makes a PDF/UA-1: tagged, with a title (Metadata.Title or the
	// page's <title>) and a language.
	PDFUA bool `json:"pdfua,omitempty"`
	// Lang is the document language, a BCP 47 tag ("en", "de-DE");
	// default the page's <html lang>.
	Lang string `json:"lang,omitempty"`
	// Attachments are files embedded in the PDF, sent in the JSON options
	// (base64). Batches take them only this way; GenerateRequest and
	// MergeRequest also have Attachments, uploads streamed as form parts,
	// which suit large files better.
	Attachments []EmbeddedFile `json:"attachments,omitempty"`
	// AttachmentRelationship is how each attachment relates to a PDF/A-3
	// (its AFRelationship): Data (default), Source, Alternative, Supplement
	// or Unspecified.
	AttachmentRelationship string `json:"attachmentRelationship,omitempty"`
	// EInvoice makes a Factur-X 1.0 / ZUGFeRD 2.x hybrid invoice. Its XML
	// goes in EInvoice.XML in a batch; GenerateRequest.EInvoiceXML and
	// MergeRequest.EInvoiceXML send it as the form part factur-x.xml.
	EInvoice *EInvoice `json:"einvoice,omitempty"`
	// Sign signs the PDF (PAdES) with an identity the service holds and
	// granted the account: the last step, never with Encryption.
	Sign *Signature `json:"sign,omitempty"`
	// Stages are the post-processing steps in an order of the caller's
	// (DESIGN §11) instead of the fixed one; with them, every step is
	// given here and not in its own field (NewStage).
	Stages []Stage `json:"stages,omitempty"`
}

// Stage is one step of RecordOptions.Stages: {"op": …} with its option's
// fields inline.
type Stage map[string]any

// Stage ops.
const (
	StagePages       = "pages"
	StageWatermark   = "watermark"
	StageMetadata    = "metadata"
	StageAttachments = "attachments"
	StagePDFA        = "pdfa"
	StagePDFUA       = "pdfua"
	StageEncrypt     = "encrypt"
	StageSign        = "sign"
)

// NewStage is step op with fields inline: NewStage(StageWatermark,
// map[string]any{"text": "DRAFT"}), NewStage(StagePDFA,
// map[string]any{"level": PDFA3B}).
func NewStage(op string, fields map[string]any) Stage {
	s := Stage{"op": op}
	for k, v := range fields {
		if k != "op" {
			s[k] = v
		}
	}
	return s
}

// PDF/A levels of RecordOptions.PDFA.
const (
	PDFA2B = "2b"
	PDFA2U = "2u"
	PDFA3B = "3b"
	PDFA3U = "3u"
)

// EmbeddedFile is a file to embed, in JSON.
type EmbeddedFile struct {
	FileName string `json:"fileName"`
	// Content is sent as base64 (at most 25 MiB).
	Content []byte `json:"content"`
	// MimeType (empty: chosen by the service from the name's extension).
	MimeType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
}

// EInvoice profiles of Factur-X (EInvoice.Profile).
const (
	ProfileMinimum   = "MINIMUM"
	ProfileBasicWL   = "BASIC WL"
	ProfileBasic     = "BASIC"
	ProfileEN16931   = "EN 16931"
	ProfileExtended  = "EXTENDED"
	ProfileXRechnung = "XRECHNUNG"
)

// EInvoice is a Factur-X / ZUGFeRD invoice: its profile and, in a batch,
// its UN/CEFACT CII XML.
type EInvoice struct {
	Profile string `json:"profile"`
	// XML is the invoice (batches; generate and merge send
	// EInvoiceXML as a form part instead).
	XML string `json:"xml,omitempty"`
}

// Signature levels (Signature.Level).
const (
	// SignLevelBB is PAdES B-B, the default.
	SignLevelBB = "B-B"
	// SignLevelBT adds an RFC 3161 time stamp from the service's
	// time-stamp authority.
	SignLevelBT = "B-T"
)

// Signature is a PAdES signature by a server-held identity.
type Signature struct {
	// Identity names the identity (a-z, 0-9 and -). One the account was
	// not granted, or unknown, is a 403.
	Identity    string `json:"identity"`
	Reason      string `json:"reason,omitempty"`
	Location    string `json:"location,omitempty"`
	ContactInfo string `json:"contactInfo,omitempty"`
	// Level is SignLevelBB (default) or SignLevelBT.
	Level string `json:"level,omitempty"`
	// Visible shows the signature in a box on a page; nil: invisible.
	Visible *SignatureBox `json:"visible,omitempty"`
}

// SignatureBox is where a signature shows, in points from the page's
// bottom left corner.
type SignatureBox struct {
	// Page is 1-based (0: the first page).
	Page   int     `json:"page,omitempty"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	// Text is shown in the box (default: the signer and the time).
	Text string `json:"text,omitempty"`
}
