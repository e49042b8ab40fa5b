package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/proto/jobspb"
)

// officeOptions is the options object of POST /pdf/office (DESIGN §11).
type officeOptions struct {
	FileName *string `json:"fileName"`
	Host     *bool   `json:"host"`
	UserType *string `json:"userType"`
	// Landscape turns every page of the documents to landscape.
	Landscape *bool `json:"landscape"`
	// PageRanges are the pages of each document exported ("1-3,5").
	PageRanges *string `json:"pageRanges"`
	// Merge makes one PDF of all the files, in upload order; else one PDF
	// per file (a ZIP of them when there are several).
	Merge *bool `json:"merge"`
	stepsOptions
}

// office is POST /pdf/office: office documents (Word, Excel, PowerPoint,
// OpenDocument, RTF, text, CSV) under "files", converted by LibreOffice on
// a worker of the office kind, each through the steps of §8 as a merge's
// output is. One conversion per file, none for a refused request; with
// host:true the output is stored and answered in the 2.2 shape. When no
// worker can convert them (no LibreOffice here, no office worker running)
// it answers 503 saying so at once, before reading the upload.
func (s *Server) office(c echo.Context) error {
	if err := s.officeTaken(c.Request().Context()); err != nil {
		return err
	}
	u := currentUser(c)
	job := s.newJob(c, u)
	defer s.cleanup(blob.JobDir(job.Id))
	if !isMultipart(c) {
		return apierr.Bad("Expected multipart/form-data with the office files under the key \"files\".").
			WithHint("curl -F files=@report.docx ...")
	}
	up, err := readMergeParts(c, s.Blobs, blob.JobInputs(job.Id), newRecordParts(s.Blobs, blob.JobDir(job.Id)))
	if err != nil {
		return err
	}
	if len(up.keys) == 0 {
		e := apierr.Invalid("files", "send one or more office documents").WithHint("curl -F files=@report.docx -F files=@sheet.xlsx ...")
		if len(up.otherParts) > 0 {
			e.Hint = "Files were sent under " + strings.Join(up.otherParts, ", ") + "; use the key \"files\"."
		}
		return e
	}
	oj, raw, err := parseOfficeOptions(up)
	if err != nil {
		return err
	}
	if err := s.checkRecord(oj.Record, u, oj.Stages); err != nil {
		return err
	}
	// The plan's pages bound a conversion as they bound a render.
	oj.MaxPages = int32(s.acct.Plan(u.Plan).MaxPages)
	ctx := c.Request().Context()
	if oj.Watermark, err = blob.OffloadWatermark(ctx, s.Blobs, blob.JobWatermark(job.Id), oj.Watermark); err != nil {
		return err
	}
	if oj.Record, err = blob.OffloadRecord(ctx, s.Blobs, blob.JobDir(job.Id), oj.Record); err != nil {
		return err
	}
	job.Kind = &jobspb.Job_Office{Office: oj}
	base := oj.FileName
	if len(up.keys) == 1 || oj.Merge {
		base = outputBase(derefString(raw.FileName), up.names[0])
	}
	userType, err := pdfopts.UserType(raw.UserType)
	if err != nil {
		return err
	}
	return s.runToFile(c, u, job, base, raw.Host != nil && *raw.Host, userType)
}

// parseOfficeOptions checks the options of an office upload (an unknown
// one is a 400 naming it) into its job.
func parseOfficeOptions(up *mergeUpload) (*jobspb.OfficeJob, officeOptions, error) {
	var raw officeOptions
	if strings.TrimSpace(up.options) != "" {
		if err := pdfopts.DecodeStrict([]byte(up.options), &raw); err != nil {
			return nil, raw, err
		}
	}
	oj := &jobspb.OfficeJob{InputKeys: up.keys, InputNames: up.names,
		Landscape: raw.Landscape != nil && *raw.Landscape, Merge: raw.Merge != nil && *raw.Merge}
	var err error
	if oj.PageRanges, err = pdfopts.PageRangesOf("pageRanges", derefString(raw.PageRanges)); err != nil {
		return nil, raw, err
	}
	// The ZIP's name when each file is a PDF of its own.
	if oj.FileName, err = pdfopts.FileName(raw.FileName, "documents"); err != nil {
		return nil, raw, err
	}
	st, err := raw.steps(up.parts)
	if err != nil {
		return nil, raw, err
	}
	oj.Watermark, oj.Info, oj.Encryption, oj.Record = st.Watermark, st.Info, st.Encryption, st.Record
	oj.Stages, oj.StepsOrdered, oj.PagesStage = st.Order, st.Ordered, st.Pages
	return oj, raw, nil
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// officeTaken answers 503 when no worker can take an office job: this
// process's own worker cannot (embedded mode without LibreOffice: its
// reason), or no worker of the office kind pulls from the queue (scaled
// out; queue.Takers). A request would otherwise wait out its whole timeout
// for a job nobody takes.
func (s *Server) officeTaken(ctx context.Context) error {
	if s.OfficeUnavailable != nil {
		if err := s.OfficeUnavailable(); err != nil {
			return apierr.Wrap(http.StatusServiceUnavailable, "Office documents cannot be converted here: "+sentenceOf(err), err).
				WithHint("Install LibreOffice (scripts/setup does) and restart the service, or run office workers (DOCRENDER_WORKER_KINDS=office).")
		}
	}
	deadline := time.Now().Add(queue.TakersWait)
	for {
		n, err := s.Queue.Takers(ctx, jobspb.KindOffice)
		if err != nil {
			// The queue's trouble is the submit's to report, as for any job.
			s.Log.Warn("office: cannot tell whether an office worker runs", "err", err)
			return nil
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return apierr.New(http.StatusServiceUnavailable, "Office documents cannot be converted now: no worker of the office kind is running.").
				WithHint("Start a worker that takes the office kind (DOCRENDER_WORKER_KINDS including office) on a machine with LibreOffice and python3-uno.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sentenceOf is err's message as a sentence: capitalised, one full stop.
func sentenceOf(err error) string {
	msg := strings.TrimRight(err.Error(), ". ")
	if msg == "" {
		return ""
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}
