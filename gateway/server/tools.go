package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// Headers of a tool's answer besides the file.
const (
	// headerFiles is how many files a ZIP answer holds (split parts, page images).
	headerFiles = "X-Files"
	// headerBytesBefore and headerBytesAfter are /pdf/optimize's input and
	// output sizes, so a client sees what it saved without a second read.
	headerBytesBefore = "X-Bytes-Before"
	headerBytesAfter  = "X-Bytes-After"
)

// tool is POST /pdf/<op>, one of DESIGN §11's PDF tools: one PDF under the
// form key "files", the tool's options as JSON in "options". The options
// are checked here as far as they can be without the document (an unknown
// or mistyped option, a bad range: a 400 naming it); a worker of the pdf
// kind runs the tool and names what only the document shows (a page past
// the last). One conversion, none for a refused request; with host:true
// the output is stored and answered in the 2.2 shape, as merge does.
//
// A tool whose output is a PDF takes `stages` (DESIGN §11), run after it
// on the output (each part of a split) as merge runs them, with the
// uploaded attachments parts of §8.
func (s *Server) tool(op string) echo.HandlerFunc {
	pdfOut := pdfopts.ToolMakesPDF(op)
	return s.withOnePDF(pdfOut, func(c echo.Context, u *account.User, job *jobspb.Job, up *mergeUpload) error {
		opts, err := pdfopts.ParseToolOptions(op, up.options)
		if err != nil {
			return err
		}
		// A part the route does not read is refused, not dropped unseen.
		if len(up.otherParts) > 0 {
			takes := "the PDF under files"
			if pdfOut {
				takes += " and attachments parts for a stages step"
			}
			return apierr.Invalid(up.otherParts[0], "this route takes "+takes)
		}
		tj := opts.Job
		tj.InputKey, tj.InputName, tj.FileName = up.keys[0], up.names[0], outputBase(opts.FileName, up.names[0])
		if pdfOut {
			if err := s.toolSteps(c, u, job, tj, opts.Stages, up.parts); err != nil {
				return err
			}
		}
		job.Kind = &jobspb.Job_Tool{Tool: tj}
		return s.runToFile(c, u, job, tj.FileName, opts.Host, opts.UserType)
	})
}

// toolSteps checks a tool's stages, with the request's uploaded §8 parts,
// into tj, its watermark image and attachments moved to the job's folder
// as a merge's are.
func (s *Server) toolSteps(c echo.Context, u *account.User, job *jobspb.Job, tj *jobspb.ToolJob, stages json.RawMessage, parts *recordParts) error {
	if parts != nil && parts.hasXML {
		return apierr.Invalid(partEInvoiceXML, "the PDF tools make no e-invoice: leave the part out")
	}
	st, err := stepsOptions{Stages: stages}.steps(parts)
	if err != nil {
		return err
	}
	if err := s.checkRecord(st.Record, u, st.Order); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if tj.Watermark, err = blob.OffloadWatermark(ctx, s.Blobs, blob.JobWatermark(job.Id), st.Watermark); err != nil {
		return err
	}
	if tj.Record, err = blob.OffloadRecord(ctx, s.Blobs, blob.JobDir(job.Id), st.Record); err != nil {
		return err
	}
	tj.Info, tj.Encryption = st.Info, st.Encryption
	tj.Stages, tj.StepsOrdered, tj.PagesStage = st.Order, st.Ordered, st.Pages
	return nil
}

// runToFile runs job as one conversion of u's and answers with the file it
// made (a tool's output, a screenshot), named base with the extension of
// its type: its bytes, or with host the 2.2 shape of it stored. A refused
// job gives everything back.
func (s *Server) runToFile(c echo.Context, u *account.User, job *jobspb.Job, base string, host bool, userType string) error {
	ctx := c.Request().Context()
	var pending *PendingFile
	if host {
		// Named once the output is known (images: one image or a ZIP).
		spec := StoreSpec{Name: base, UserType: userType, Hosted: true}
		var err error
		if pending, err = s.reserveFile(ctx, u, spec); err != nil {
			return err
		}
		job.OutputKey = pending.BlobKey()
	}
	res, err := s.runCharged(ctx, u, job)
	if err != nil {
		if pending != nil {
			pending.Abandon(ctx)
		}
		return err
	}
	// A result without a type is a PDF (the tools' usual output).
	ctype := cmp.Or(res.GetTool().GetContentType(), "application/pdf")
	name := base + "." + extensionOf(ctype)
	setToolHeaders(c, res)
	setReportHeader(c, res.Report)
	if pending == nil {
		return s.sendBlob(c, res.OutputKey, name, ctype, "attachment")
	}
	pending.Named(name, ctype)
	f, err := pending.Commit(ctx, res.Size)
	if err != nil {
		return err
	}
	return s.answerStored(c, &storedGenerate{host: true}, f, res.Report)
}

// setToolHeaders says what the output holds: pages of a PDF, files of a
// ZIP, an optimisation's sizes.
func setToolHeaders(c echo.Context, res *jobspb.Result) {
	h := c.Response().Header()
	t := res.GetTool()
	switch {
	case t.GetFiles() > 0:
		h.Set(headerFiles, fmt.Sprint(t.GetFiles()))
	case t.GetContentType() == "application/pdf" && res.Pages > 0:
		h.Set(headerPages, fmt.Sprint(res.Pages))
	}
	if t.GetBytesBefore() > 0 {
		h.Set(headerBytesBefore, fmt.Sprint(t.GetBytesBefore()))
		h.Set(headerBytesAfter, fmt.Sprint(res.Size))
	}
}

// outputBase is the output's name without extension: the fileName option,
// else the upload's name without its extension, else "document".
func outputBase(fileName, uploaded string) string {
	if fileName != "" {
		return fileName
	}
	if i := strings.LastIndexByte(uploaded, '.'); i > 0 {
		uploaded = uploaded[:i]
	}
	if n, err := pdfopts.FileName(&uploaded, "document"); err == nil {
		return n
	}
	return "document"
}

// extensionOf is the file extension of a tool's output type.
func extensionOf(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	switch mt {
	case "application/zip":
		return "zip"
	case "text/plain":
		return "txt"
	case "text/markdown":
		return "md"
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	case "image/webp":
		return "webp"
	}
	return "pdf"
}

// withOnePDF is a handler for a request that takes one PDF (inspect, the
// PDF tools): handle gets the caller, a new job of theirs and the upload,
// read by readOnePDF, with §8's parts (attachments) when record. The job's
// files (the input, an unhosted output) are temporary: gone once answered.
func (s *Server) withOnePDF(record bool, handle func(c echo.Context, u *account.User, job *jobspb.Job, up *mergeUpload) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := currentUser(c)
		job := s.newJob(c, u)
		defer s.cleanup(blob.JobDir(job.Id))
		var parts *recordParts
		if record {
			parts = newRecordParts(s.Blobs, blob.JobDir(job.Id))
		}
		up, err := s.readOnePDF(c, blob.JobInputs(job.Id), parts)
		if err != nil {
			return err
		}
		return handle(c, u, job, up)
	}
}

// readOnePDF reads a request that takes exactly one PDF under "files"
// (inspect, the PDF tools) as merge reads its inputs, refusing before any
// job runs an upload of no file, of two, or of one that is plainly not a
// PDF. The worker still reads it whole and names a corrupt one.
func (s *Server) readOnePDF(c echo.Context, prefix string, record *recordParts) (*mergeUpload, error) {
	if !isMultipart(c) {
		return nil, apierr.Bad("Expected multipart/form-data with the PDF under the key \"files\".").
			WithHint("curl -F files=@document.pdf ...")
	}
	// No fingerprint of a one-PDF upload is made: its bytes are not hashed.
	up, err := readFileParts(c, s.Blobs, prefix, record, false)
	if err != nil {
		return nil, err
	}
	switch {
	case len(up.keys) != 1:
		e := apierr.Invalid("files", "send exactly one PDF").WithHint("curl -F files=@document.pdf ...")
		if len(up.keys) == 0 && len(up.otherParts) > 0 {
			e.Hint = fmt.Sprintf("Files were sent under %q; use the key \"files\".", up.otherParts)
		}
		return nil, e
	case up.notPDF[0] != "":
		e := apierr.Bad("Invalid PDF file %q: %s.", up.names[0], up.notPDF[0])
		e.Extra = map[string]any{"field": "files"}
		return nil, e
	}
	return up, nil
}
