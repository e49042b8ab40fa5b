package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/gateway/templates"
	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/proto/jobspb"
)

// Stored templates (DESIGN §9): upload (a new version of a name already
// stored), list, get, delete. The store is gateway/templates; rendering
// with a template (generate, batch, preview) reads it by Get or ByName.

// Bounds of the upload's own fields.
const (
	maxTemplateNameBytes = 1 << 10
	maxSampleDataBytes   = 1 << 20
)

var templateFields = textFields{"name": maxTemplateNameBytes, "sampleData": maxSampleDataBytes}

// templateGrace is how long a deleted template's (or dropped version's)
// blobs stay: a render queued before the delete may still read them. A
// request waits for its job jobWait at most; a batch's documents may wait
// in the queue as long as the batch lives (pkg/batch Record.TTL: the plan's
// retention and a day). The longest of these over every plan.
func templateGrace(cfg config.Config) time.Duration {
	g := jobWait(&jobspb.Job{TimeoutMs: cfg.RenderTimeout.Milliseconds()})
	for _, p := range cfg.Plans {
		g = max(g, p.Retention+24*time.Hour)
	}
	return g
}

// Templates exposes the template store (the sweeper, the render path).
func (s *Server) Templates() *templates.Store { return s.templates }

// uploadTemplate is POST /api/templates: multipart name, files (as
// generate's) and an optional sampleData (JSON). Every HTML file must parse
// as a template; the first refusal is a 400 naming the file and the line.
func (s *Server) uploadTemplate(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	// The files land in a temporary folder (swept with abandoned jobs'
	// if this process dies), are checked, then copied under the version's
	// own prefix by the store.
	dir := blob.JobDir(ids.New())
	defer s.cleanup(dir)
	prefix := dir + "in/"
	up, err := readUploadFields(c, s.Blobs, prefix, nil, templateFields)
	if err != nil {
		return err
	}
	name, err := templates.CleanName(up.text["name"])
	if err != nil {
		return err
	}
	if up.hasURL {
		return apierr.Invalid("url", "a template is uploaded files, not a page's address").
			WithHint("Send the HTML and its assets under \"files\".")
	}
	if strings.TrimSpace(up.options) != "" {
		return apierr.Invalid("options", "print options are sent with each render, not stored with a template")
	}
	entry, err := templateEntry(up)
	if err != nil {
		return err
	}
	lang, err := s.checkTemplateFiles(ctx, up, entry)
	if err != nil {
		return err
	}
	var sample []byte
	if raw, ok := up.text["sampleData"]; ok {
		if sample, err = checkSampleData(raw); err != nil {
			return err
		}
	}
	in := templates.Upload{Owner: u.ID, Name: name, Limit: s.acct.Plan(u.Plan).Templates, From: prefix,
		Entry: entry, Lang: lang, Sample: sample}
	for _, f := range up.files {
		in.Files = append(in.Files, templates.File{Name: f.Name, Size: f.Size})
	}
	t, v, err := s.templates.Put(ctx, in)
	if err != nil {
		return err
	}
	logger(c).Info("template stored", "template", t.ID, "version", v.Version, "files", len(v.Files), "bytes", v.Size)
	return c.JSON(http.StatusCreated, map[string]any{"success": true, "data": map[string]any{
		"id": t.ID, "name": t.Name, "version": v.Version, "createdAt": apitime.Format(v.CreatedAt), "size": v.Size,
	}})
}

// templateEntry is the HTML a template renders, as generate picks it
// (upload.entryFile): index.html, else the first .html file.
func templateEntry(up *upload) (string, error) {
	if len(up.files) == 0 {
		e := apierr.Invalid("files", "required: the template's HTML and its assets")
		if len(up.otherParts) > 0 {
			return "", e.WithHint(fmt.Sprintf("Files were sent under %q; use the key \"files\".", up.otherParts))
		}
		return "", e.WithHint("curl -F name=invoice -F files=@index.html ...")
	}
	entry := up.entryFile()
	if entry == "" {
		e := apierr.Invalid("files", "no HTML file among them")
		e.Extra["receivedFiles"] = up.files
		return "", e.WithHint("Include a file named index.html or at least one file with the .html extension.")
	}
	return entry, nil
}

// isHTML says whether an uploaded file is HTML, which a template's are.
func isHTML(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".html" || ext == ".htm"
}

// checkTemplateFiles parses every HTML file of the upload as a template and
// returns the entry's <html lang>.
func (s *Server) checkTemplateFiles(ctx context.Context, up *upload, entry string) (string, error) {
	lang := ""
	for _, f := range up.files {
		if !isHTML(f.Name) {
			continue
		}
		src, err := s.readBlob(ctx, up.prefix+f.Name, maxTemplateFileBytes)
		if err != nil {
			return "", err
		}
		l, err := parseTemplate(src)
		var se *templateSyntaxError
		if errors.As(err, &se) {
			e := apierr.Invalid("files", fmt.Sprintf("%s line %d: %s", f.Name, se.Line, se.Problem))
			e.Extra["file"], e.Extra["line"] = f.Name, se.Line
			e.Err = err
			return "", e.WithHint("Fix the template at that line; {{{...}}} (unescaped HTML) is never accepted.")
		}
		if err != nil {
			return "", err
		}
		if f.Name == entry {
			lang = l
		}
	}
	return lang, nil
}

// readBlob reads an uploaded file, at most limit bytes of it.
func (s *Server) readBlob(ctx context.Context, key string, limit int64) ([]byte, error) {
	rc, _, err := s.Blobs.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read upload: %w", err)
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// checkSampleData checks the sampleData field as render data.
func checkSampleData(raw string) ([]byte, error) {
	if err := decodeTemplateData([]byte(raw)); err != nil {
		var de *templateDataError
		if errors.As(err, &de) {
			problem := de.Problem
			if de.Path != "" {
				problem = de.Path + ": " + problem
			}
			return nil, (&invalid.Error{Field: "sampleData", Problem: problem, Err: err}).
				WithHint("Send a JSON object, the data of one render.")
		}
		return nil, err
	}
	return []byte(raw), nil
}

// templateSummary is an item of GET /api/templates.
type templateSummary struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	LatestVersion int    `json:"latestVersion"`
	CreatedAt     string `json:"createdAt"`
	UpdatedAt     string `json:"updatedAt"`
}

// listTemplates is GET /api/templates: the caller's templates, newest
// first, paged like the hosted list.
func (s *Server) listTemplates(c echo.Context) error {
	page, err := pageParam(c, "page", defaultPage, 1<<20)
	if err != nil {
		return err
	}
	limit, err := pageParam(c, "limit", defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	list, total, err := s.templates.List(c.Request().Context(), currentUser(c).ID, page, limit)
	if err != nil {
		return err
	}
	items := make([]templateSummary, 0, len(list))
	for _, t := range list {
		items = append(items, templateSummary{ID: t.ID, Name: t.Name, LatestVersion: t.Latest(),
			CreatedAt: apitime.Format(t.CreatedAt), UpdatedAt: apitime.Format(t.UpdatedAt)})
	}
	return paged(c, "templates", items, total, page, limit)
}

// templateVersion is a version in GET /api/templates/:id.
type templateVersion struct {
	Version   int      `json:"version"`
	CreatedAt string   `json:"createdAt"`
	Size      int64    `json:"size"`
	Entry     string   `json:"entry"`
	Files     []string `json:"files"`
	HasSample bool     `json:"hasSampleData"`
}

// getTemplate is GET /api/templates/:id: the template and its versions,
// oldest first.
func (s *Server) getTemplate(c echo.Context) error {
	t, err := s.templates.Get(c.Request().Context(), currentUser(c).ID, c.Param("id"))
	if err != nil {
		return err
	}
	vs := make([]templateVersion, 0, len(t.Versions))
	for _, v := range t.Versions {
		vs = append(vs, templateVersion{Version: v.Version, CreatedAt: apitime.Format(v.CreatedAt), Size: v.Size,
			Entry: v.Entry, Files: v.Files, HasSample: v.HasSample})
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": map[string]any{
		"id": t.ID, "name": t.Name, "latestVersion": t.Latest(),
		"createdAt": apitime.Format(t.CreatedAt), "updatedAt": apitime.Format(t.UpdatedAt), "versions": vs,
	}})
}

// deleteTemplate is DELETE /api/templates/:id: every version, found no more
// from now on; renders already queued still finish (the blobs stay for
// templateGrace).
func (s *Server) deleteTemplate(c echo.Context) error {
	id := c.Param("id")
	if err := s.templates.Delete(c.Request().Context(), currentUser(c).ID, id); err != nil {
		return err
	}
	logger(c).Info("template deleted", "template", id)
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "Template deleted."})
}
