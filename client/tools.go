package client

import (
	"context"
	"errors"
	"io"
)

// The PDF tools (DESIGN §11): POST /pdf/split, /pdf/pages, /pdf/flatten,
// /pdf/optimize, /pdf/metadata, /pdf/text and /pdf/images. Each takes one
// PDF and counts one conversion. Each method returns the output; ToolHosted
// sends any of the requests with host:true and returns the stored file's
// link instead.

// ToolOptions are the options every tool takes.
type ToolOptions struct {
	// FileName is the output's name without extension (default: the
	// uploaded file's name without its extension).
	FileName string `json:"fileName,omitempty"`
	// UserType decides who may read a hosted output: "guest" (anyone with
	// the link, the default) or "registered" (its owner).
	UserType string `json:"userType,omitempty"`
}

// PDFSteps are the steps the tools whose output is a PDF (split: each
// part; pages, flatten, optimize, metadata) run on it afterwards, in the
// order given: NewStage(StageWatermark, ...), NewStage(StagePDFA, ...),
// NewStage(StageSign, ...) (DESIGN §11 stages).
type PDFSteps struct {
	Stages []Stage `json:"stages,omitempty"`
	// Attachments are files for an attachments step without files of its
	// own (NewStage(StageAttachments, nil)), uploaded as form parts named
	// "attachments" as GenerateRequest's are.
	Attachments []Upload `json:"-"`
}

// SplitRequest cuts a PDF into several: by Ranges ("1-3,4-9", one file
// each) or Every n pages, not both. The answer is a ZIP of PDFs.
type SplitRequest struct {
	File   Upload `json:"-"`
	Ranges string `json:"ranges,omitempty"`
	Every  int    `json:"every,omitempty"`
	ToolOptions
	PDFSteps
}

// PagesRequest selects, reorders, rotates and deletes pages; every page
// number names a page of the uploaded PDF. At least one of Select, Rotate
// and Delete.
type PagesRequest struct {
	File Upload `json:"-"`
	// Select lists pages in the order wanted ("3,1-2", repeats allowed).
	Select string `json:"select,omitempty"`
	// Rotate turns pages clockwise: ranges ("2-3", "all") to multiples of 90.
	Rotate map[string]int `json:"rotate,omitempty"`
	// Delete leaves pages out ("2,5-6").
	Delete string `json:"delete,omitempty"`
	ToolOptions
	PDFSteps
}

// FlattenRequest burns form fields and annotations into the pages.
type FlattenRequest struct {
	File Upload `json:"-"`
	ToolOptions
	PDFSteps
}

// OptimizeRequest makes a PDF smaller. Download.BytesBefore and
// BytesAfter say by how much.
type OptimizeRequest struct {
	File Upload `json:"-"`
	// ImageQuality is the JPEG quality of recompressed images, 1-100
	// (nil: 75).
	ImageQuality *int `json:"imageQuality,omitempty"`
	// MaxImageDpi downsamples images to at most this resolution (nil:
	// 150; 0 keeps their size).
	MaxImageDpi *int `json:"maxImageDpi,omitempty"`
	ToolOptions
	PDFSteps
}

// MetadataRequest rewrites a PDF's document information (Info and XMP).
type MetadataRequest struct {
	File     Upload    `json:"-"`
	Metadata *Metadata `json:"metadata"`
	ToolOptions
	PDFSteps
}

// TextRequest reads a PDF's text: Format "text" (the default) or
// "markdown", of Pages ("1-3,5"; empty: all).
type TextRequest struct {
	File   Upload `json:"-"`
	Format string `json:"format,omitempty"`
	Pages  string `json:"pages,omitempty"`
	ToolOptions
}

// ImagesRequest draws pages as images: Format "png" (the default), "jpeg"
// or "webp", at DPI (1-600; 0: 72), of Pages ("1-3,5"; empty: all). One
// page asked, or a PDF of one page, is answered with the image; more with
// a ZIP of one image a page.
type ImagesRequest struct {
	File   Upload `json:"-"`
	Format string `json:"format,omitempty"`
	DPI    int    `json:"dpi,omitempty"`
	Pages  string `json:"pages,omitempty"`
	ToolOptions
}

// ToolRequest is any tool's request.
type ToolRequest interface {
	form
	toolPath() string
}

func (SplitRequest) toolPath() string    { return "/pdf/split" }
func (PagesRequest) toolPath() string    { return "/pdf/pages" }
func (FlattenRequest) toolPath() string  { return "/pdf/flatten" }
func (OptimizeRequest) toolPath() string { return "/pdf/optimize" }
func (MetadataRequest) toolPath() string { return "/pdf/metadata" }
func (TextRequest) toolPath() string     { return "/pdf/text" }
func (ImagesRequest) toolPath() string   { return "/pdf/images" }

// The tools take no Idempotency-Key (DESIGN §4.20 names generate, merge
// and batch).
func (SplitRequest) idempotencyKey() string    { return "" }
func (PagesRequest) idempotencyKey() string    { return "" }
func (FlattenRequest) idempotencyKey() string  { return "" }
func (OptimizeRequest) idempotencyKey() string { return "" }
func (MetadataRequest) idempotencyKey() string { return "" }
func (TextRequest) idempotencyKey() string     { return "" }
func (ImagesRequest) idempotencyKey() string   { return "" }

func (r SplitRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host, r.Attachments...)
}
func (r PagesRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host, r.Attachments...)
}
func (r FlattenRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host, r.Attachments...)
}
func (r OptimizeRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host, r.Attachments...)
}
func (r MetadataRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host, r.Attachments...)
}
func (r TextRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host)
}
func (r ImagesRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	return toolBody(r.File, r, host)
}

// toolBody is a tool's form: the PDF under "files", the request's own
// fields as the options, and the attachments for its stages.
func toolBody(file Upload, options any, host bool, attachments ...Upload) (func() (io.ReadCloser, string, error), error) {
	if file.Open == nil {
		return nil, errors.New("docrender: a PDF tool needs the PDF (File)")
	}
	fields, err := optionsPart(options, false, host)
	if err != nil {
		return nil, err
	}
	return multipartParts(fields, append(asParts(partFiles, "application/pdf", []Upload{file}), recordParts(attachments, nil)...)), nil
}

// Split cuts a PDF into several (POST /pdf/split): a ZIP of PDFs;
// Download.Files says how many.
func (c *Client) Split(ctx context.Context, r SplitRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// Pages selects, reorders, rotates or deletes pages (POST /pdf/pages).
func (c *Client) Pages(ctx context.Context, r PagesRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// Flatten burns form fields and annotations into the pages (POST /pdf/flatten).
func (c *Client) Flatten(ctx context.Context, r FlattenRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// Optimize makes a PDF smaller (POST /pdf/optimize).
func (c *Client) Optimize(ctx context.Context, r OptimizeRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// SetMetadata rewrites a PDF's document information (POST /pdf/metadata).
func (c *Client) SetMetadata(ctx context.Context, r MetadataRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// Text reads a PDF's text or Markdown (POST /pdf/text).
func (c *Client) Text(ctx context.Context, r TextRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// Images draws a PDF's pages (POST /pdf/images): an image, or a ZIP of them.
func (c *Client) Images(ctx context.Context, r ImagesRequest) (*Download, error) {
	return c.postForm(ctx, r.toolPath(), r)
}

// ToolHosted runs any tool with host:true: the output is stored behind an
// expiring link, returned instead of the output.
func (c *Client) ToolHosted(ctx context.Context, r ToolRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, r.toolPath(), r)
}
