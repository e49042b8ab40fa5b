package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Rendering stored templates (DESIGN §9): POST /pdf/generate with a JSON
// body naming the template and carrying its data, and the preview of a
// version's sample data.

// TemplateRef names a stored template: by Name (the latest version unless
// Version is set) or by ID (with Version, that version; without, the
// latest). Templates are private: another account's is not found (404).
type TemplateRef struct {
	Name string
	ID   string
	// Version is a version number from 1; 0 means the latest.
	Version int
}

// MarshalJSON writes the ref as the API takes it: a name alone as a
// string, else {"id"|"name", "version"?}.
func (r TemplateRef) MarshalJSON() ([]byte, error) {
	if r.ID == "" && r.Version == 0 {
		return json.Marshal(r.Name)
	}
	return json.Marshal(struct {
		ID      string `json:"id,omitempty"`
		Name    string `json:"name,omitempty"`
		Version int    `json:"version,omitempty"`
	}{r.ID, r.Name, r.Version})
}

func (r TemplateRef) check() error {
	if r.Name == "" && r.ID == "" {
		return errors.New("docrender: a template render needs the template's Name or ID")
	}
	if r.Version < 0 {
		return fmt.Errorf("docrender: template version %d: want a version from 1, or 0 for the latest", r.Version)
	}
	return nil
}

// TemplateRequest is a stored template filled with data and rendered.
type TemplateRequest struct {
	Template TemplateRef
	// Data is the template's data: a JSON object, as any value
	// encoding/json turns into one (a map, a struct), or its JSON text as
	// json.RawMessage or []byte. nil sends {} (a missing field renders
	// empty). At most 5 MiB and 100 levels deep.
	Data any
	// Options are generate's (spec 2.1, DESIGN §6 and §8). Files of §8
	// go inline here (RecordOptions.Attachments, EInvoice.XML): a JSON
	// body has no form parts.
	Options *PDFOptions
	// DocumentID is a caching ID (DESIGN §4.1), sent beside the options
	// (it wins over Options.DocumentID): it covers the template version
	// and the data, so other data is another PDF.
	DocumentID string
	// IdempotencyKey: as GenerateRequest's.
	IdempotencyKey string
}

// templateData is d as the JSON of a data field.
func templateData(d any) (json.RawMessage, error) {
	switch v := d.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("not valid JSON")
		}
		return v, nil
	case []byte:
		if !json.Valid(v) {
			return nil, errors.New("not valid JSON")
		}
		return json.RawMessage(v), nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}

func (r TemplateRequest) body(host bool) (func() (io.ReadCloser, string, error), error) {
	if err := r.Template.check(); err != nil {
		return nil, err
	}
	data, err := templateData(r.Data)
	if err != nil {
		return nil, fmt.Errorf("docrender: template data: %w", err)
	}
	return jsonBody(struct {
		Template   TemplateRef     `json:"template"`
		Data       json.RawMessage `json:"data"`
		Options    *PDFOptions     `json:"options,omitempty"`
		DocumentID string          `json:"documentId,omitempty"`
		Host       bool            `json:"host,omitempty"`
	}{r.Template, data, r.Options, r.DocumentID, host})
}

func (r TemplateRequest) idempotencyKey() string { return r.IdempotencyKey }

// GenerateTemplate renders a stored template filled with r.Data (POST
// /pdf/generate with a JSON body) and returns the PDF. It is retried as
// Generate is. A template that cannot be filled with this data (a value
// of the wrong type for #each, say) is a 422 *Error whose Details name
// the template's line and the data's path.
func (c *Client) GenerateTemplate(ctx context.Context, r TemplateRequest) (*Download, error) {
	return c.postForm(ctx, "/pdf/generate", r)
}

// GenerateTemplateHosted renders a stored template as GenerateTemplate
// does and stores the PDF behind an expiring link; it returns the link.
func (c *Client) GenerateTemplateHosted(ctx context.Context, r TemplateRequest) (*Hosted, error) {
	return c.postFormHosted(ctx, "/pdf/generate", r)
}

// PreviewTemplate renders a template version's sample data (GET
// /api/templates/:id/preview; version 0: the latest) and returns the PDF.
// It counts as a conversion. It takes the API key, or failing that the
// session. A version without sample data renders with {}.
func (c *Client) PreviewTemplate(ctx context.Context, id string, version int) (*Download, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return nil, err
	}
	var q url.Values
	if version < 0 {
		return nil, fmt.Errorf("docrender: template version %d: want a version from 1, or 0 for the latest", version)
	}
	if version > 0 {
		q = url.Values{"version": {strconv.Itoa(version)}}
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: "/api/templates/" + esc + "/preview", query: q, auth: authViewer})
	if err != nil {
		return nil, err
	}
	return newDownload(resp), nil
}
