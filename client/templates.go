package client

import (
	"context"
	"net/http"
	"time"
)

// Stored templates (DESIGN §9): a layout stored once, then rendered with
// data only. Every call takes the API key, or failing that the session.
// Templates are private to their account: another account's is not found.

// TemplateUpload is a template to store: the same Name as a stored
// template adds a version to it.
type TemplateUpload struct {
	// Name is the template's name in the account: 1 to 100 printable
	// characters.
	Name string
	// Files are the HTML and its assets, as generate's: the entry is
	// index.html, else the first .html file. Every .html file must be a
	// valid template (a 400 naming the file and the line otherwise).
	Files []Upload
	// SampleData, when set, is a JSON object: what the preview renders.
	SampleData []byte
}

// TemplateStored is the version an upload stored.
type TemplateStored struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// Size is the bytes of its files.
	Size int64 `json:"size"`
}

// UploadTemplate stores a template, or a new version of the one of that
// name (POST /api/templates). A new name past the plan's template count is
// a 403 *Error. Not retried after a 500: a second upload would be another
// version.
func (c *Client) UploadTemplate(ctx context.Context, t TemplateUpload) (*TemplateStored, error) {
	fields := [][2]string{{"name", t.Name}}
	if t.SampleData != nil {
		fields = append(fields, [2]string{"sampleData", string(t.SampleData)})
	}
	s, err := getData[TemplateStored](ctx, c, &request{method: http.MethodPost, path: "/api/templates", auth: authViewer,
		body: multipartBody(fields, t.Files)})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// TemplateSummary is a template in the list.
type TemplateSummary struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	LatestVersion int       `json:"latestVersion"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// TemplateList is one page of the account's templates, newest first.
type TemplateList struct {
	Templates  []TemplateSummary
	Total      int64
	Pagination Pagination
}

// Templates lists the account's templates (GET /api/templates). page and
// limit 0 take the defaults (1 and 20; limit at most 100).
func (c *Client) Templates(ctx context.Context, page, limit int) (*TemplateList, error) {
	var out struct {
		Data struct {
			Templates []TemplateSummary `json:"templates"`
			Total     int64             `json:"total"`
		} `json:"data"`
		Pagination Pagination `json:"pagination"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/api/templates", query: pageQuery(page, limit), auth: authViewer}, &out)
	if err != nil {
		return nil, err
	}
	return &TemplateList{Templates: out.Data.Templates, Total: out.Data.Total, Pagination: out.Pagination}, nil
}

// TemplateVersion is one stored version; it never changes.
type TemplateVersion struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	Size      int64     `json:"size"`
	// Entry is the HTML it renders, one of Files.
	Entry         string   `json:"entry"`
	Files         []string `json:"files"`
	HasSampleData bool     `json:"hasSampleData"`
}

// Template is a stored template with its versions, oldest first.
type Template struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	LatestVersion int               `json:"latestVersion"`
	CreatedAt     time.Time         `json:"createdAt"`
	UpdatedAt     time.Time         `json:"updatedAt"`
	Versions      []TemplateVersion `json:"versions"`
}

// Template returns a template and its versions (GET /api/templates/:id).
func (c *Client) Template(ctx context.Context, id string) (*Template, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return nil, err
	}
	t, err := getData[Template](ctx, c, &request{method: http.MethodGet, path: "/api/templates/" + esc, auth: authViewer})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTemplate deletes a template, every version (DELETE
// /api/templates/:id). It is not found from then on; renders already
// queued with it still finish.
func (c *Client) DeleteTemplate(ctx context.Context, id string) error {
	esc, err := pathEscape(id)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/api/templates/" + esc, auth: authViewer}, nil)
}
