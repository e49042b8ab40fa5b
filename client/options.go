package client

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// PDFOptions are the generation options of spec 2.1 and DESIGN §6, for
// Generate and for every document of a batch. The zero value of a field
// leaves the service's default; the fields whose default is true are
// pointers (use Bool).
type PDFOptions struct {
	// FileName is the output name without .pdf (default "document").
	FileName string `json:"fileName,omitempty"`
	// Format is A4 (default), Letter, Legal, Tabloid, A3 or A5.
	Format string `json:"format,omitempty"`
	// Orientation is "portrait" (default) or "landscape".
	Orientation string `json:"orientation,omitempty"`
	// Width and Height set a custom page size ("8.5in", "21cm"; px, in, cm, mm).
	Width  string `json:"width,omitempty"`
	Height string `json:"height,omitempty"`
	// Margin per side (default 1cm each).
	Margin *Margin `json:"margin,omitempty"`
	// PreferCSSPageSize uses the page's CSS @page size.
	PreferCSSPageSize bool `json:"preferCSSPageSize,omitempty"`
	// DocumentID is a caching ID (DESIGN §4.1): the same ID and inputs
	// return the stored PDF without rendering again.
	DocumentID string `json:"documentId,omitempty"`
	// Regenerate renders even when the caching ID holds a PDF.
	Regenerate bool `json:"regenerate,omitempty"`
	// UserType "registered" makes a stored result private to its owner;
	// "guest" or empty leaves it public to anyone holding its ID.
	UserType string `json:"userType,omitempty"`
	// Watermark is stamped on the pages after rendering.
	Watermark *Watermark `json:"watermark,omitempty"`

	PrintOptions

	// Extra is sent as more fields of the options object, over the typed
	// ones: for fields this client does not know yet.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the typed fields and then Extra.
func (o PDFOptions) MarshalJSON() ([]byte, error) {
	type plain PDFOptions // without this method
	return withExtra(plain(o), o.Extra)
}

// PrintOptions are DESIGN §6's print options, and §8's RecordOptions. A
// batch document may carry its own, which replace the batch's field by
// field.
type PrintOptions struct {
	// HeaderTemplate and FooterTemplate are HTML printed in the top and
	// bottom margins; elements of class pageNumber, totalPages, title,
	// date and url are filled in.
	HeaderTemplate string `json:"headerTemplate,omitempty"`
	FooterTemplate string `json:"footerTemplate,omitempty"`
	// WaitForSelector prints once an element matches this CSS selector.
	WaitForSelector string `json:"waitForSelector,omitempty"`
	// WaitForExpression prints once this JavaScript expression is truthy.
	WaitForExpression string `json:"waitForExpression,omitempty"`
	// WaitDelay waits this long before printing.
	WaitDelay Duration `json:"waitDelay,omitempty"`
	// EmulatedMediaType is "print" (default) or "screen".
	EmulatedMediaType string `json:"emulatedMediaType,omitempty"`
	// Scale is 0.1 to 2 (default 1).
	Scale float64 `json:"scale,omitempty"`
	// PageRanges such as "1-3,5" (default all pages).
	PageRanges string `json:"pageRanges,omitempty"`
	// PrintBackground (default true).
	PrintBackground *bool `json:"printBackground,omitempty"`
	// Tagged makes an accessible, tagged PDF (default true).
	Tagged *bool `json:"tagged,omitempty"`
	// Outline adds bookmarks from the headings.
	Outline bool `json:"outline,omitempty"`
	// TOC fills <nav data-toc> with a table of contents of the h1–h3
	// headings, with links and page numbers (DESIGN §10).
	TOC bool `json:"toc,omitempty"`
	// Split prints a long document in slices at once (DESIGN §10): true
	// always, false never; nil: past the service's DOCRENDER_SPLIT_PAGES.
	Split *bool `json:"split,omitempty"`
	// Metadata is the document information (title from <title> by default).
	Metadata *Metadata `json:"metadata,omitempty"`
	// Encryption locks the PDF with AES-256.
	Encryption *Encryption `json:"encryption,omitempty"`
	// FailOnConsoleErrors: an uncaught exception or console.error fails
	// the render with a 422 RENDER_CHECK_FAILED.
	FailOnConsoleErrors bool `json:"failOnConsoleErrors,omitempty"`
	// FailOnResourceErrors: an asset that fails, answers >= 400 or is
	// blocked fails the render with a 422.
	FailOnResourceErrors bool `json:"failOnResourceErrors,omitempty"`
	// FailOnAccessibilityErrors: an image without alternative text (an img
	// without alt, a role=img element without an accessible name; alt=""
	// is decorative and fine) fails the render with a 422 (DESIGN §8).
	FailOnAccessibilityErrors bool `json:"failOnAccessibilityErrors,omitempty"`
	// ExtraHTTPHeaders, Cookies and UserAgent apply to a page fetched by URL.
	ExtraHTTPHeaders map[string]string `json:"extraHttpHeaders,omitempty"`
	Cookies          []Cookie          `json:"cookies,omitempty"`
	UserAgent        string            `json:"userAgent,omitempty"`
	// Report puts report.json into a batch's ZIP.
	Report bool `json:"report,omitempty"`

	// RecordOptions: PDF/A, PDF/UA, language, attachments, e-invoice,
	// signature (DESIGN §8).
	RecordOptions
}

// Margin is a page's margins, lengths with a unit ("2cm", "0.5in", "40px").
type Margin struct {
	Top    string `json:"top,omitempty"`
	Right  string `json:"right,omitempty"`
	Bottom string `json:"bottom,omitempty"`
	Left   string `json:"left,omitempty"`
}

// Watermark is text or a PNG image stamped on the pages (DESIGN §4.17).
type Watermark struct {
	Text string `json:"text,omitempty"`
	// Image is a base64 PNG (or a data: URL of one).
	Image    string   `json:"image,omitempty"`
	FontSize float64  `json:"fontSize,omitempty"`
	Color    string   `json:"color,omitempty"`
	Opacity  *float64 `json:"opacity,omitempty"`
	Rotation *float64 `json:"rotation,omitempty"`
	// Position: "center" (default) and the others the service lists.
	Position string `json:"position,omitempty"`
	// Pages: "all" (default) or ranges like "1-3,5".
	Pages string `json:"pages,omitempty"`
}

// Metadata is a PDF's document information.
type Metadata struct {
	Title    string   `json:"title,omitempty"`
	Author   string   `json:"author,omitempty"`
	Subject  string   `json:"subject,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	Creator  string   `json:"creator,omitempty"`
}

// Encryption locks a PDF (AES-256). OwnerPassword is required.
type Encryption struct {
	OwnerPassword string `json:"ownerPassword"`
	UserPassword  string `json:"userPassword,omitempty"`
	// AllowPrinting and AllowCopying default to true.
	AllowPrinting  *bool `json:"allowPrinting,omitempty"`
	AllowCopying   *bool `json:"allowCopying,omitempty"`
	AllowModifying bool  `json:"allowModifying,omitempty"`
}

// Cookie is sent with a page fetched by URL.
type Cookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Domain string `json:"domain,omitempty"`
	Path   string `json:"path,omitempty"`
}

// Duration is a time.Duration written as Go's duration text ("500ms").
type Duration time.Duration

// MarshalJSON writes d as "500ms".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "500ms".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Bool returns a pointer to v, for the options whose default is true.
func Bool(v bool) *bool { return &v }

// Float returns a pointer to v.
func Float(v float64) *float64 { return &v }

// MergeOptions are the options of a merge (spec 4.2, DESIGN §4.7, §6).
type MergeOptions struct {
	// FileName is the output name without .pdf (default "merged-document").
	FileName  string     `json:"fileName,omitempty"`
	UserType  string     `json:"userType,omitempty"`
	Watermark *Watermark `json:"watermark,omitempty"`
	Metadata  *Metadata  `json:"metadata,omitempty"`
	// Encryption locks the merged PDF.
	Encryption *Encryption `json:"encryption,omitempty"`
	// RecordOptions apply to the merged PDF, whatever its inputs: a PDF/A
	// is one whatever the inputs were (an input's font that is not
	// embedded makes it fail with a 422 naming the rule).
	RecordOptions
	// Extra is sent as more fields of the options object.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the typed fields and then Extra.
func (o MergeOptions) MarshalJSON() ([]byte, error) {
	type plain MergeOptions
	return withExtra(plain(o), o.Extra)
}

// withExtra marshals v, an object, with extra's fields set over it.
func withExtra(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	maps.Copy(m, extra)
	return json.Marshal(m)
}

// optionsPart is a form's "options" part: o (none: the caller set no
// options) with host:true when host; no part when there is nothing to say.
func optionsPart(o any, none, host bool) ([][2]string, error) {
	if none && !host {
		return nil, nil
	}
	b, err := withHost(o, host)
	if err != nil {
		return nil, fmt.Errorf("docrender: encode options: %w", err)
	}
	return [][2]string{{"options", string(b)}}, nil
}

// withHost is o as sent with host set.
func withHost(o any, host bool) ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil || !host {
		return b, err
	}
	var m map[string]any
	if string(b) == "null" {
		m = map[string]any{}
	} else if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["host"] = true
	return json.Marshal(m)
}
