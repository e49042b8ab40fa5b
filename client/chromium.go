package client

import (
	"context"
	"errors"
	"io"
	"maps"
)

// Screenshots and Markdown (DESIGN §11): POST /pdf/screenshot takes a page
// as Generate does and answers one image; POST /pdf/markdown prints a
// Markdown document as a PDF. Each counts one conversion.

// ScreenshotRequest is a page to capture: Files (index.html, or the first
// .html, with its assets) or the URL of a public page, not both.
type ScreenshotRequest struct {
	Files   []Upload
	URL     string
	Options *ScreenshotOptions
}

// ScreenshotOptions are a screenshot's options. The zero value of a field
// leaves the service's default.
type ScreenshotOptions struct {
	// FileName is the image's name without extension (default "screenshot").
	FileName string `json:"fileName,omitempty"`
	// Format is "png" (the default), "jpeg" or "webp".
	Format string `json:"format,omitempty"`
	// Quality is 1-100, for jpeg and webp only (0: the encoder's, 80).
	Quality int `json:"quality,omitempty"`
	// FullPage captures the whole page, past the view's height.
	FullPage bool `json:"fullPage,omitempty"`
	// Clip captures a rectangle of the page instead of the view.
	Clip *Clip `json:"clip,omitempty"`
	// Width and Height are the view in CSS pixels (default 1280 × 800;
	// at most 4096 × 16384 and 25 million pixels).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// OmitBackground leaves a page without a background of its own
	// transparent (png and webp).
	OmitBackground bool `json:"omitBackground,omitempty"`
	// UserType decides who may read a hosted image: "guest" (the default)
	// or "registered".
	UserType string `json:"userType,omitempty"`
	// The waits and checks of DESIGN §6, and a URL's request fields.
	WaitForSelector      string            `json:"waitForSelector,omitempty"`
	WaitForExpression    string            `json:"waitForExpression,omitempty"`
	WaitDelay            Duration          `json:"waitDelay,omitempty"`
	EmulatedMediaType    string            `json:"emulatedMediaType,omitempty"`
	FailOnConsoleErrors  bool              `json:"failOnConsoleErrors,omitempty"`
	FailOnResourceErrors bool              `json:"failOnResourceErrors,omitempty"`
	ExtraHTTPHeaders     map[string]string `json:"extraHttpHeaders,omitempty"`
	Cookies              []Cookie          `json:"cookies,omitempty"`
	UserAgent            string            `json:"userAgent,omitempty"`

	// Extra is sent as more fields of the options object, over the typed
	// ones, as PDFOptions.Extra is.
	Extra map[string]any `json:"-"`
}

// MarshalJSON writes the typed fields and then Extra.
func (o ScreenshotOptions) MarshalJSON() ([]byte, error) {
	type plain ScreenshotOptions // without this method
	return withExtra(plain(o), o.Extra)
}

// Clip is a rectangle of the page in CSS pixels.
type Clip struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// Screenshots take no Idempotency-Key (DESIGN §4.20 names generate, merge
// and batch), nor does Markdown.
func (ScreenshotRequest) idempotencyKey() string { return "" }
func (MarkdownRequest) idempotencyKey() string   { return "" }

func (r ScreenshotRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return pageBody("a screenshot", r.Files, r.URL, r.Options, r.Options == nil, host, nil)
}

// Screenshot captures a page as one image (POST /pdf/screenshot);
// Download.ContentType says its format.
func (c *Client) Screenshot(ctx context.Context, r ScreenshotRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/screenshot", r)
}

// ScreenshotHosted captures a page and stores the image behind an
// expiring link (host:true); it returns the link.
func (c *Client) ScreenshotHosted(ctx context.Context, r ScreenshotRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/screenshot", r)
}

// MarkdownRequest is a Markdown document to print: Files holds index.md
// (else the first .md file), the images it links, and optionally
// template.html, the page it goes into at {{content}}. Options are
// Generate's; the headings become the PDF's outline unless NoOutline.
type MarkdownRequest struct {
	Files     []Upload
	Options   *PDFOptions
	NoOutline bool
}

func (r MarkdownRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	if len(r.Files) == 0 {
		return nil, errors.New("docrender: Markdown needs its files (index.md)")
	}
	o := r.Options
	if r.NoOutline {
		// Outline's false is its zero value, which PDFOptions leaves out:
		// sent as an extra field, over the service's default of true.
		c := PDFOptions{}
		if o != nil {
			c = *o
		}
		c.Extra = maps.Clone(c.Extra)
		if c.Extra == nil {
			c.Extra = map[string]any{}
		}
		c.Extra["outline"] = false
		o = &c
	}
	fields, err := optionsPart(o, o == nil, host)
	if err != nil {
		return nil, err
	}
	return multipartParts(fields, asParts(partFiles, "", r.Files)), nil
}

// Markdown prints a Markdown document as a PDF (POST /pdf/markdown).
func (c *Client) Markdown(ctx context.Context, r MarkdownRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/markdown", r)
}

// MarkdownHosted prints a Markdown document and stores the PDF behind an
// expiring link (host:true); it returns the link.
func (c *Client) MarkdownHosted(ctx context.Context, r MarkdownRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/markdown", r)
}
