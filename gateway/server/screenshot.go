package server

import (
	"cmp"
	"context"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// The routes of DESIGN §11 that the chromium workers serve besides
// generate: a screenshot of a page, and Markdown printed as a PDF.

// screenshot is POST /pdf/screenshot: a page sent as generate takes it
// (files with index.html, or url; the same waits), captured as one PNG,
// JPEG or WebP image. Options are checked before anything is queued; what
// only the loaded page shows (a full page past the bounds, a clip off the
// page) the worker names. One conversion, none for a refused request;
// host:true stores the image and answers the 2.2 shape.
func (s *Server) screenshot(c echo.Context) error {
	u := currentUser(c)
	job := s.newJob(c, u)
	defer s.cleanup(blob.JobDir(job.Id))
	up, err := readUpload(c, s.Blobs, blob.JobInputs(job.Id), nil)
	if err != nil {
		return err
	}
	entry, err := s.generateSource(c.Request().Context(), up)
	if err != nil {
		return err
	}
	opts, err := pdfopts.ParseScreenshotOptions(up.options, s.Config.RenderTimeout)
	if err != nil {
		return err
	}
	src := opts.Job.Source
	if up.hasURL {
		src.Url = proto.CloneOf(opts.Fetch)
		src.Url.Url = up.url
	} else {
		src.BundlePrefix, src.Files, src.Entry = up.prefix, up.names(), entry
	}
	job.Kind = &jobspb.Job_Screenshot{Screenshot: opts.Job}
	return s.runToFile(c, u, job, cmp.Or(opts.FileName, "screenshot"), opts.Host, opts.UserType)
}

// markdown is POST /pdf/markdown: index.md and the files it links (images),
// an optional template.html with {{content}}, and every print option of
// generate, printed as a PDF whose outline is the document's headings
// unless outline:false. It runs as a generate does (caching ID, host, one
// conversion); the worker turns the Markdown into the page it prints.
func (s *Server) markdown(c echo.Context) error {
	u := currentUser(c)
	job := s.newJob(c, u)
	defer s.cleanup(blob.JobDir(job.Id))
	up, entry, opts, err := s.readGenerate(c, job, markdownSource, func(options string) (pdfopts.Options, error) {
		return markdownOptions(options, s.Config.RenderTimeout)
	})
	if err != nil {
		return err
	}
	return s.runGenerate(c, u, job, up, entry, opts, func(rj *jobspb.RenderJob) error {
		rj.BundlePrefix, rj.Files, rj.Entry, rj.Markdown = up.prefix, up.names(), entry, true
		return nil
	})
}

// markdownTemplate is the upload that, when sent, is the page the
// document goes into at its {{content}} (the worker's MarkdownTemplate).
const markdownTemplate = "template.html"

// markdownSource picks a Markdown request's document: index.md, else the
// first .md or .markdown file. It takes files only: a page by URL is
// generate's.
func markdownSource(_ context.Context, up *upload) (string, error) {
	if up.hasURL {
		return "", apierr.Invalid("url", "send the Markdown as index.md under \"files\"; a page by URL is /pdf/generate's or /pdf/screenshot's")
	}
	if up.has("index.md") {
		return "index.md", nil
	}
	for _, f := range up.files {
		switch strings.ToLower(path.Ext(f.Name)) {
		case ".md", ".markdown":
			return f.Name, nil
		}
	}
	e := apierr.Invalid("files", "no Markdown file among the uploads: send index.md")
	e.Hint = "curl -F files=@index.md -F files=@" + markdownTemplate + " ..."
	if len(up.otherParts) > 0 && len(up.files) == 0 {
		e.Hint = "Files were sent under another key than \"files\"; use the key \"files\"."
	}
	return "", e
}

// markdownOptions are generate's options with outline on by default: a
// Markdown document's headings are its structure, and its readers expect
// them as bookmarks (DESIGN §11).
func markdownOptions(options string, renderTimeout time.Duration) (pdfopts.Options, error) {
	var raw pdfopts.Raw
	if strings.TrimSpace(options) != "" {
		if err := pdfopts.Decode([]byte(options), &raw); err != nil {
			return pdfopts.Options{}, err
		}
	}
	if raw.Outline == nil {
		on := true
		raw.Outline = &on
	}
	return raw.Validate("document", renderTimeout)
}
