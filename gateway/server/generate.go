package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/filename"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// generate is POST /pdf/generate (spec 4.1): a multipart upload, or a
// JSON body naming a stored template and its data (DESIGN §9, template.go).
func (s *Server) generate(c echo.Context) error {
	if isJSONBody(c) {
		return s.generateFromTemplate(c)
	}
	u := currentUser(c)
	job := s.newJob(c, u)
	// Inputs and the unhosted result are temporary: gone once answered.
	defer s.cleanup(blob.JobDir(job.Id))
	up, entry, opts, err := s.readGenerate(c, job, s.generateSource, func(options string) (pdfopts.Options, error) {
		return pdfopts.ParseJSON(options, "document", s.Config.RenderTimeout)
	})
	if err != nil {
		return err
	}
	return s.runGenerate(c, u, job, up, entry, opts, func(rj *jobspb.RenderJob) error {
		if up.hasURL {
			rj.Url = proto.CloneOf(opts.Fetch)
			rj.Url.Url = up.url
		} else {
			rj.BundlePrefix, rj.Files, rj.Entry = up.prefix, up.names(), entry
		}
		return nil
	})
}

// readGenerate reads a request that takes what generate takes (POST
// /pdf/generate, /pdf/markdown): the upload, streamed under job's inputs
// with DESIGN §8's parts; its entry, which source checks; the options,
// parsed by parse, with room for an uploaded header or footer and the
// record's parts applied.
func (s *Server) readGenerate(c echo.Context, job *jobspb.Job, source func(context.Context, *upload) (string, error),
	parse func(options string) (pdfopts.Options, error)) (*upload, string, pdfopts.Options, error) {
	up, err := readUpload(c, s.Blobs, blob.JobInputs(job.Id), newRecordParts(s.Blobs, blob.JobDir(job.Id)))
	if err != nil {
		return nil, "", pdfopts.Options{}, err
	}
	entry, err := source(c.Request().Context(), up)
	if err != nil {
		return nil, "", pdfopts.Options{}, err
	}
	opts, err := parse(up.options)
	if err != nil {
		return nil, "", pdfopts.Options{}, err
	}
	opts.MakeRoom(up.has(pdfopts.HeaderFile), up.has(pdfopts.FooterFile))
	if opts.Record, err = up.record.apply(opts.Record, opts.Encryption, opts.Print.Untagged); err != nil {
		return nil, "", pdfopts.Options{}, err
	}
	return up, entry, opts, nil
}

// runGenerate renders what a generate asked for and answers, whatever
// its source (source fills in the job's page): the checks of §8, the
// Idempotency-Key (DESIGN §4.20), the caching ID and hosting (cache.go,
// hosted.go), the conversion charged. up and entry are what the caching
// ID hashes.
func (s *Server) runGenerate(c echo.Context, u *account.User, job *jobspb.Job, up *upload, entry string, opts pdfopts.Options, source func(*jobspb.RenderJob) error) error {
	ctx := c.Request().Context()
	if err := s.checkRecord(opts.Record, u, opts.Stages); err != nil {
		return err
	}
	if err := pdfopts.CheckStages(opts.Steps()); err != nil {
		return err
	}
	// DESIGN §4.20: the same keyed request answered again, or joined.
	fp := fingerprint("generate", inputHash(up, entry, opts), opts.DocumentID, fmt.Sprint(opts.Regenerate))
	if o, err := s.beginIdempotent(c, u, fp); o != nil || err != nil {
		if err != nil {
			return err
		}
		return s.replay(c, o)
	}
	// host and caching IDs (hosted.go, cache.go): a cache hit is answered
	// here; a stored result is written straight to its files/<id> key.
	sg, done, err := s.prepareGenerate(c, u, up, entry, opts)
	if done || err != nil {
		return err
	}
	if sg != nil {
		job.OutputKey = sg.BlobKey()
	}
	// After the cache lookup: a hit stores nothing. The image lives in the
	// job's folder, removed by the cleanup above.
	wm, err := blob.OffloadWatermark(ctx, s.Blobs, blob.JobWatermark(job.Id), opts.Watermark)
	if err != nil {
		sg.abandon(c)
		return err
	}
	rec, err := blob.OffloadRecord(ctx, s.Blobs, blob.JobDir(job.Id), opts.Record)
	if err != nil {
		sg.abandon(c)
		return err
	}
	rj := &jobspb.RenderJob{Page: opts.Page, Watermark: wm, Print: opts.Print, Info: opts.Info, Encryption: opts.Encryption, Record: rec,
		MaxPages: int32(s.acct.Plan(u.Plan).MaxPages), Stages: opts.Stages, StepsOrdered: opts.StepsOrdered, PagesStage: opts.Pages}
	if err := source(rj); err != nil {
		sg.abandon(c)
		return err
	}
	job.Kind = &jobspb.Job_Render{Render: rj}
	res, err := s.runCharged(ctx, u, job)
	if err != nil {
		sg.abandon(c)
		return err
	}
	setReportHeader(c, res.Report)
	if sg != nil {
		return s.finishGenerate(c, sg, res)
	}
	return s.sendBlob(c, res.OutputKey, opts.FileName+".pdf", "application/pdf", "attachment")
}

// checkPageURL checks the address of a page to render (a generate's url, a
// batch document's) under the egress rules (DESIGN §4.19) and returns its
// normal form; the worker's egress applies them again when it fetches.
func (s *Server) checkPageURL(ctx context.Context, field, raw string) (string, error) {
	return s.pageURLChecker()(ctx, field, raw)
}

// pageURLChecker checks page URLs as checkPageURL does, each host once (a
// batch's documents often share one).
func (s *Server) pageURLChecker() func(ctx context.Context, field, raw string) (string, error) {
	p := netguard.New(s.Config.RenderAllowHosts).Memoized()
	return func(ctx context.Context, field, raw string) (string, error) {
		return p.CheckURL(ctx, field, raw, "use extraHttpHeaders")
	}
}

// generateSource checks what a generate renders: uploaded files (it returns
// the entry file) or, with the url field, a page on the web (DESIGN §6,
// checked against the egress rules now and again when fetched; up.url
// becomes its normal form).
func (s *Server) generateSource(ctx context.Context, up *upload) (string, error) {
	if up.hasURL {
		if len(up.files) > 0 {
			return "", apierr.Invalid("url", "send either url or files, not both")
		}
		var err error
		up.url, err = s.checkPageURL(ctx, "url", up.url)
		return "", err
	}
	if len(up.files) == 0 {
		e := apierr.Bad("No files uploaded. Send the HTML under the form key \"files\", or a page's address under \"url\".")
		e.Extra = map[string]any{"field": "files"}
		if len(up.otherParts) > 0 {
			e.Hint = fmt.Sprintf("Files were sent under %q; use the key \"files\".", up.otherParts)
		} else {
			e.Hint = "curl -F files=@index.html ..."
		}
		return "", e
	}
	entry := up.entryFile()
	if entry == "" {
		e := apierr.Bad("No HTML file found among the uploaded files.")
		e.Hint = "Include a file named index.html or at least one file with the .html extension."
		e.Extra = map[string]any{"receivedFiles": up.files, "field": "files"}
		return "", e
	}
	return entry, nil
}

// sendBlob streams a stored file to the client.
func (s *Server) sendBlob(c echo.Context, key, name, ctype, disposition string) error {
	rc, info, err := s.Blobs.Get(c.Request().Context(), key)
	if err != nil {
		return fmt.Errorf("read result: %w", err)
	}
	defer rc.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, ctype)
	h.Set(echo.HeaderContentLength, fmt.Sprint(info.Size))
	h.Set(echo.HeaderContentDisposition, contentDisposition(disposition, name))
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	if _, err = io.Copy(c.Response(), rc); err != nil {
		return err
	}
	// The whole answer goes out now: what the handler still does after it
	// (deleting the job's files, giving back the account's slot) is not the
	// client's wait.
	c.Response().Flush()
	return nil
}

// contentDisposition quotes name for old clients and gives the UTF-8 form
// (RFC 6266). Names are cleaned where they are made (pdfopts.FileName);
// cleaning again here covers files stored before that.
func contentDisposition(kind, name string) string {
	name = filename.Clean(name)
	ascii := make([]rune, 0, len(name))
	for _, r := range name {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			r = '_'
		}
		ascii = append(ascii, r)
	}
	return fmt.Sprintf(`%s; filename="%s"; filename*=UTF-8''%s`, kind, string(ascii), url.PathEscape(name))
}

// cleanup deletes temporary job files after the response, whatever happened.
func (s *Server) cleanup(prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Blobs.DeletePrefix(ctx, prefix); err != nil {
		s.Log.Warn("cleanup failed", "prefix", prefix, "err", err)
	}
}
