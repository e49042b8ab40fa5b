package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/gateway/templates"
	"github.com/docrender/docrender/pkg/batch"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/tmpl"
	"github.com/docrender/docrender/proto/jobspb"
)

// isJSONBody reports whether the request's body is JSON.
func isJSONBody(c echo.Context) bool {
	ct := strings.ToLower(c.Request().Header.Get(echo.HeaderContentType))
	return strings.HasPrefix(ct, "application/json")
}

// templateGenerate is POST /pdf/generate's JSON body (DESIGN §9): the
// template, its data, the options, and the answer's fields (documentId,
// host, fileName, userType, regenerate) also at the top level.
type templateGenerate struct {
	Template   json.RawMessage `json:"template"`
	Data       json.RawMessage `json:"data"`
	Options    json.RawMessage `json:"options"`
	DocumentID *string         `json:"documentId"`
	Host       *bool           `json:"host"`
	FileName   *string         `json:"fileName"`
	UserType   *string         `json:"userType"`
	Regenerate *bool           `json:"regenerate"`
}

// templateRef names a stored template: by name (its latest version), or
// by id (or name) and, optionally, version.
type templateRef struct {
	Name    string
	ID      string
	Version int
}

// parseTemplateRef reads the template field: "name" or {id|name, version?}.
func parseTemplateRef(field string, raw json.RawMessage) (templateRef, error) {
	var ref templateRef
	if len(raw) == 0 || string(raw) == "null" {
		return ref, invalid.Field(field, `is required: a template's name, or {"id": "...", "version": 2}`)
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		if ref.Name = strings.TrimSpace(name); ref.Name == "" {
			return ref, invalid.Field(field, "must name a template")
		}
		return ref, nil
	}
	var obj struct {
		ID      *string `json:"id"`
		Name    *string `json:"name"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return ref, invalid.Field(field, `must be a template's name or {"id": "...", "version": 2}`)
	}
	if obj.ID != nil {
		ref.ID = strings.TrimSpace(*obj.ID)
	}
	if obj.Name != nil {
		ref.Name = strings.TrimSpace(*obj.Name)
	}
	if ref.ID == "" && ref.Name == "" {
		return ref, invalid.Field(field+".id", "is required (or name)")
	}
	if obj.Version != nil {
		if *obj.Version < 1 {
			return ref, invalid.Field(field+".version", "must be a version number from 1")
		}
		ref.Version = *obj.Version
	}
	return ref, nil
}

// resolveTemplate finds the account's template version ref names; another
// account's template is as unknown as one that never was: 404.
func (s *Server) resolveTemplate(ctx context.Context, u *account.User, ref templateRef) (*templates.Template, templates.Version, error) {
	var t *templates.Template
	var err error
	if ref.ID != "" {
		t, err = s.templates.Get(ctx, u.ID, ref.ID)
	} else {
		t, err = s.templates.ByName(ctx, u.ID, ref.Name)
	}
	if errors.Is(err, templates.ErrNotFound) {
		what := ref.ID
		if what == "" {
			what = ref.Name
		}
		return nil, templates.Version{}, apierr.Newf(404, "No template %q.", what).WithHint("List your templates with GET /api/templates.")
	}
	if err != nil {
		return nil, templates.Version{}, err
	}
	v, ok := s.templates.Version(t, ref.Version)
	if !ok {
		return nil, templates.Version{}, apierr.Newf(404, "Template %q has no version %d.", t.Name, ref.Version).
			WithHint(fmt.Sprintf("Its latest version is %d.", t.Versions[len(t.Versions)-1].Version))
	}
	return t, v, nil
}

// generateFromTemplate is POST /pdf/generate with a JSON body (DESIGN §9).
func (s *Server) generateFromTemplate(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	var req templateGenerate
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(err)
	}
	if err := pdfopts.Decode(data, &req); err != nil {
		return err
	}
	if len(req.Template) == 0 {
		// Not a template render: the client meant an upload.
		return apierr.Bad("Expected multipart/form-data with the HTML under the key \"files\", or a JSON body naming a stored template.").
			WithHint(`Send the HTML with curl -F files=@index.html, or {"template": "invoice", "data": {...}}.`)
	}
	ref, err := parseTemplateRef("template", req.Template)
	if err != nil {
		return err
	}
	var raw pdfopts.Raw
	if len(req.Options) > 0 && string(req.Options) != "null" {
		if err := pdfopts.Decode(req.Options, &raw); err != nil {
			return err
		}
	}
	// The answer's fields may also stand at the top level (DESIGN §9).
	for _, f := range []struct {
		top **string
		in  **string
	}{{&req.DocumentID, &raw.DocumentID}, {&req.FileName, &raw.FileName}, {&req.UserType, &raw.UserType}} {
		if *f.top != nil {
			*f.in = *f.top
		}
	}
	if req.Host != nil {
		raw.Host = req.Host
	}
	if req.Regenerate != nil {
		raw.Regenerate = req.Regenerate
	}
	t, v, err := s.resolveTemplate(ctx, u, ref)
	if err != nil {
		return err
	}
	job := s.newJob(c, u)
	defer s.cleanup(blob.JobDir(job.Id))
	return s.renderTemplate(c, u, job, t, v, req.Data, raw, "data")
}

// renderTemplate renders template version v of t filled with data (JSON)
// and answers as a generate does. field names the data in errors.
func (s *Server) renderTemplate(c echo.Context, u *account.User, job *jobspb.Job, t *templates.Template, v templates.Version, data json.RawMessage, raw pdfopts.Raw, field string) error {
	canon, err := templateData(field, data)
	if err != nil {
		return err
	}
	opts, err := raw.Validate(t.Name, s.Config.RenderTimeout)
	if err != nil {
		return err
	}
	opts.MakeRoom(slices.Contains(v.Files, pdfopts.HeaderFile), slices.Contains(v.Files, pdfopts.FooterFile))
	// What the caching ID hashes: the template version and the data.
	up := templateUpload(t, v, canon)
	return s.runGenerate(c, u, job, up, v.Entry, opts, func(rj *jobspb.RenderJob) error {
		rj.BundlePrefix, rj.Files, rj.Entry = blob.TemplateFiles(t.ID, v.Version), v.Files, v.Entry
		fill := &jobspb.TemplateFill{TemplateId: t.ID, Version: int32(v.Version)}
		if len(canon) <= batch.InlineDataBytes {
			fill.DataJson = canon
		} else {
			fill.DataKey = blob.JobDir(job.Id) + "data.json"
			if err := s.Blobs.Put(c.Request().Context(), fill.DataKey, strings.NewReader(string(canon)), int64(len(canon))); err != nil {
				return fmt.Errorf("store template data: %w", err)
			}
		}
		rj.Template = fill
		return nil
	})
}

// templateData checks a template's data (a JSON object within tmpl's
// bounds) and returns it in a canonical form (keys sorted): the same data
// however it was written is one caching ID.
func templateData(field string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	m, err := tmpl.DecodeData(raw)
	if err != nil {
		var bad *tmpl.DataError
		if errors.As(err, &bad) {
			path := field
			if bad.Path != "" {
				path += "." + bad.Path
			}
			return nil, invalid.Field(path, bad.Problem)
		}
		return nil, err
	}
	return json.Marshal(m)
}

// templateUpload is a template render's inputs as a caching ID hashes
// them: the template version (its files never change) and the data.
func templateUpload(t *templates.Template, v templates.Version, data []byte) *upload {
	ver := sha256.Sum256([]byte(t.ID + "@" + strconv.Itoa(v.Version)))
	sum := sha256.Sum256(data)
	return &upload{files: []uploadedFile{
		{Name: "template " + t.ID + "@" + strconv.Itoa(v.Version), SHA256: ver[:]},
		{Name: "data.json", SHA256: sum[:]},
	}}
}

// templatePreview is GET /api/templates/:id/preview?version=: the version's
// sampleData rendered, a conversion like any render (DESIGN §9).
func (s *Server) templatePreview(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	ref := templateRef{ID: c.Param("id")}
	if q := c.QueryParam("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return apierr.Invalid("version", "must be a version number from 1")
		}
		ref.Version = n
	}
	t, v, err := s.resolveTemplate(ctx, u, ref)
	if err != nil {
		return err
	}
	sample := json.RawMessage("{}")
	rc, err := s.templates.Sample(ctx, t, v)
	switch {
	case err == nil:
		b, err := io.ReadAll(io.LimitReader(rc, tmpl.MaxDataBytes+1))
		rc.Close()
		if err != nil {
			return fmt.Errorf("template sample data: %w", err)
		}
		sample = b
	case !errors.Is(err, templates.ErrNotFound):
		return err
	}
	job := s.newJob(c, u)
	defer s.cleanup(blob.JobDir(job.Id))
	return s.renderTemplate(c, u, job, t, v, sample, pdfopts.Raw{}, "sampleData")
}
