package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/proto/jobspb"
)

// fileURL is the public address of a stored file (spec 2.2).
func (s *Server) fileURL(id string) string { return s.Config.BaseURL + "/api/hosted-pdfs/" + id }

// StoreSpec describes a result to keep as a stored file.
type StoreSpec struct {
	Name        string // with extension, e.g. invoice.pdf
	ContentType string
	UserType    string // "guest", "registered" or empty (public)
	// Hosted files hold a slot of the plan's hosted limit and are listed.
	Hosted bool
	// DocumentID and InputHash make the file the cached document of a caching ID.
	DocumentID, InputHash string
	// Replaces is the cached document this one supersedes; it is deleted on Commit.
	Replaces *files.File
	// KeepFor, when set, is the file's life instead of the plan's retention.
	KeepFor time.Duration
}

// PendingFile is a stored file being produced. Its ID, expiry and (when
// hosted) hosted slot are fixed before the job runs, so a full hosted limit
// refuses the request without rendering. The job writes to BlobKey(); then
// Commit records the file, or Abandon gives everything back.
//
// Other features use it too: merge and batch with host:true call
// s.reserveFile, point the job's OutputKey at BlobKey(), and answer with
// s.hostedResponse(c, file) after Commit.
type PendingFile struct {
	s      *Server
	file   *files.File
	spec   StoreSpec
	hosted bool // a slot is held
}

// reserveFile prepares a stored result of u: expiry is now plus the plan's
// retention; a hosted file takes a slot (429 HOSTED_PDF_LIMIT_REACHED when
// none is free; the limit is read now, so a plan change applies at once).
func (s *Server) reserveFile(ctx context.Context, u *account.User, spec StoreSpec) (*PendingFile, error) {
	plan := s.acct.Plan(u.Plan)
	now := time.Now().UTC()
	f := &files.File{
		ID: ids.New(), OwnerID: u.ID, Name: spec.Name, ContentType: spec.ContentType,
		UserType: spec.UserType, Hosted: spec.Hosted, CreatedAt: now, ExpiresAt: now.Add(cmp.Or(spec.KeepFor, plan.Retention)),
		DocumentID: spec.DocumentID, InputHash: spec.InputHash,
	}
	if f.UserType == "" {
		f.UserType = "guest"
	}
	p := &PendingFile{s: s, file: f, spec: spec}
	if spec.Hosted {
		limit := plan.Hosted
		// Regenerating a hosted cached document swaps one file for another:
		// the old one's slot is freed on Commit, so it may be borrowed meanwhile.
		if r := spec.Replaces; r != nil && r.Hosted {
			limit++
		}
		// Held only until the request ends: Commit extends the slot to the
		// file's expiry, and a gateway that dies first frees it soon.
		until := now.Add(s.requestHold())
		if f.ExpiresAt.Before(until) {
			until = f.ExpiresAt
		}
		if err := s.files.ReserveHosted(ctx, u.ID, f.ID, until, limit); err != nil {
			return nil, err
		}
		p.hosted = true
	}
	// Tracked before any byte is written: a result that arrives after the
	// request gave up is still swept at expiry.
	if err := s.files.Track(ctx, f.ID, f.ExpiresAt); err != nil {
		p.Abandon(ctx)
		return nil, err
	}
	return p, nil
}

// ID is the stored file's ID.
func (p *PendingFile) ID() string { return p.file.ID }

// BlobKey is where the job must write the result.
func (p *PendingFile) BlobKey() string { return blob.FileKey(p.file.ID) }

// Named gives the file the name and type its job's output turned out to
// have (a PDF tool's: one image or a ZIP of them). Call it before Commit.
func (p *PendingFile) Named(name, contentType string) {
	p.file.Name, p.file.ContentType = name, contentType
}

// Abandon gives back the hosted slot and deletes whatever the job wrote.
func (p *PendingFile) Abandon(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if p.hosted {
		if err := p.s.files.ReleaseHosted(ctx, p.file.OwnerID, p.file.ID); err != nil {
			p.s.Log.Warn("release hosted slot", "file", p.file.ID, "err", err)
		}
		p.hosted = false
	}
	if err := p.s.Blobs.Delete(ctx, p.BlobKey()); err != nil {
		p.s.Log.Warn("delete abandoned result", "file", p.file.ID, "err", err)
	}
}

// Commit records the file whose bytes the job wrote (size from the job's
// result; 0 means "look it up"), points the caching ID at it and deletes the
// file it replaces. On error the file is abandoned.
func (p *PendingFile) Commit(ctx context.Context, size int64) (*files.File, error) {
	ctx = context.WithoutCancel(ctx) // the render is paid for: finish even if the client left
	if err := p.commit(ctx, size); err != nil {
		p.Abandon(ctx)
		return nil, err
	}
	if r := p.spec.Replaces; r != nil && r.ID != p.file.ID {
		if err := p.s.files.Delete(ctx, r); err != nil {
			// The old file still expires and is swept; the answer is good.
			p.s.Log.Warn("delete replaced document", "file", r.ID, "err", err)
		}
	}
	return p.file, nil
}

func (p *PendingFile) commit(ctx context.Context, size int64) error {
	if size <= 0 {
		info, err := p.s.Blobs.Stat(ctx, p.BlobKey())
		if err != nil {
			return fmt.Errorf("stat stored result: %w", err)
		}
		size = info.Size
	}
	p.file.Size = size
	if err := p.s.files.Put(ctx, p.file); err != nil {
		return err
	}
	if p.file.DocumentID != "" {
		if err := p.s.files.SetCache(ctx, p.file); err != nil {
			return err
		}
	}
	return nil
}

// hostedResult is spec 2.2.
type hostedResult struct {
	URL       string `json:"url"`
	PdfID     string `json:"pdfId"`
	ExpiresAt string `json:"expiresAt"`
	// Report is the render report (DESIGN §6) of a file just rendered.
	Report *reportBody `json:"report,omitempty"`
}

// hostedResponse answers with spec 2.2 for a stored file, and the report
// of its render when it was rendered for this answer.
func (s *Server) hostedResponse(c echo.Context, f *files.File, r *jobspb.Report) error {
	return c.JSON(http.StatusOK, hostedResult{URL: s.fileURL(f.ID), PdfID: f.ID, ExpiresAt: apitime.Format(f.ExpiresAt),
		Report: newReportBody(r)})
}
