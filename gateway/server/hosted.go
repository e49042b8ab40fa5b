package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
)

// viewer is the account reading a stored file: the owner of a valid API key
// or session, else "" (anonymous). Unlike requireKey, bad credentials are
// not refused: a public link must open even in a browser holding a stale
// session cookie; a private file then answers 401 as for anyone anonymous.
func (s *Server) viewer(c echo.Context) string {
	ctx := c.Request().Context()
	if k := c.Request().Header.Get("X-API-Key"); k != "" || account.WellFormedKey(bearer(c)) {
		if k == "" {
			k = bearer(c)
		}
		if u, _, err := s.acct.Authenticate(ctx, strings.TrimSpace(k)); err == nil {
			return u.ID
		}
		return ""
	}
	if u, _, err := s.sessionUser(c, true); err == nil && u != nil {
		return u.ID
	}
	return ""
}

// readableFile loads a live file the caller may read (DESIGN §4.4).
func (s *Server) readableFile(c echo.Context, id string) (*files.File, error) {
	f, err := s.files.Get(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	if err := files.Authorize(f, s.viewer(c)); err != nil {
		return nil, err
	}
	return f, nil
}

// serveFile answers a stored file's bytes with the given disposition. Every
// retrieval of the bytes counts a download (DESIGN §4.5).
func (s *Server) serveFile(param, disposition string) echo.HandlerFunc {
	return func(c echo.Context) error {
		f, err := s.readableFile(c, c.Param(param))
		if err != nil {
			return err
		}
		return s.sendFile(c, f, disposition)
	}
}

// sendFile streams f with Range, HEAD and conditional-request support
// (http.ServeContent; both blob stores hand out seekable readers).
func (s *Server) sendFile(c echo.Context, f *files.File, disposition string) error {
	ctx := c.Request().Context()
	rc, _, err := s.Blobs.Get(ctx, blob.FileKey(f.ID))
	if errors.Is(err, blob.ErrNotFound) {
		// Deleted or swept between the record read and now.
		return files.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read stored file: %w", err)
	}
	defer rc.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, f.ContentType)
	h.Set(echo.HeaderContentDisposition, contentDisposition(disposition, f.Name))
	h.Set("X-Content-Type-Options", "nosniff")
	// Browsers may keep the bytes but must ask again: a deleted or expired
	// file answers 404 at once, and each retrieval is counted.
	h.Set("Cache-Control", "private, no-cache")
	// A file's bytes never change under its ID: the ID is a strong ETag.
	h.Set("ETag", `"`+f.ID+`"`)
	req := c.Request()
	c.Response().Before(func() {
		if countsAsDownload(req, c.Response().Status) {
			if _, err := s.files.CountDownload(context.WithoutCancel(ctx), f); err != nil {
				logger(c).Warn("count download", "file", f.ID, "err", err)
			}
		}
	})
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(c.Response(), req, "", f.CreatedAt, rs)
		return nil
	}
	h.Set(echo.HeaderContentLength, strconv.FormatInt(f.Size, 10))
	c.Response().WriteHeader(http.StatusOK)
	if req.Method == http.MethodHead {
		return nil
	}
	_, err = io.Copy(c.Response(), rc)
	return err
}

// countsAsDownload: a GET that sends the file from its start. HEAD, 304 and
// the follow-up range requests of a PDF viewer reading further into the
// same file are not new downloads.
func countsAsDownload(req *http.Request, status int) bool {
	if req.Method != http.MethodGet {
		return false
	}
	switch status {
	case http.StatusOK:
		return true
	case http.StatusPartialContent:
		return strings.HasPrefix(strings.TrimSpace(req.Header.Get("Range")), "bytes=0-")
	}
	return false
}

// hostedMetadata is spec 2.3.
type hostedMetadata struct {
	ID           string `json:"id"`
	PdfID        string `json:"pdfId"`
	OriginalName string `json:"originalName"`
	FileSize     int64  `json:"fileSize"`
	URL          string `json:"url"`
	ExpiresAt    string `json:"expiresAt"`
	IsPublic     bool   `json:"isPublic"`
	Downloads    int64  `json:"downloads"`
	CreatedAt    string `json:"createdAt"`
}

func (s *Server) metadataOf(ctx context.Context, f *files.File) (hostedMetadata, error) {
	n, err := s.files.Downloads(ctx, f.ID)
	if err != nil {
		return hostedMetadata{}, err
	}
	return hostedMetadata{
		ID: f.RecordID, PdfID: f.ID, OriginalName: f.Name, FileSize: f.Size, URL: s.fileURL(f.ID),
		ExpiresAt: apitime.Format(f.ExpiresAt), IsPublic: f.Public(), Downloads: n, CreatedAt: apitime.Format(f.CreatedAt),
	}, nil
}

// hostedMetadata is GET /api/hosted-pdfs/:pdfId/metadata (spec 4.11): open
// for public files (spec §5.5); a private file's is its owner's only.
func (s *Server) hostedMetadata(c echo.Context) error {
	f, err := s.readableFile(c, c.Param("pdfId"))
	if err != nil {
		return err
	}
	m, err := s.metadataOf(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

// sharedMetadata is spec 2.4.
type sharedMetadata struct {
	UserType     string `json:"userType"`
	Expires      string `json:"expires"`
	FileName     string `json:"fileName"`
	OriginalName string `json:"originalName"`
	RequiresAuth bool   `json:"requiresAuth"`
	IsShared     bool   `json:"isShared"`
}

// sharedMetadata is GET /pdf/metadata/:id (spec 4.9): what a shared link's
// page needs before fetching the file, above all whether to ask the reader
// to sign in. It answers anyone holding the ID, private files included;
// requiresAuth would be of no use otherwise. fileName is the stored
// object's name (<id>.pdf), originalName the name it downloads as.
func (s *Server) sharedMetadata(c echo.Context) error {
	f, err := s.files.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sharedMetadata{
		UserType: f.UserType, Expires: apitime.Format(f.ExpiresAt), FileName: storedName(f), OriginalName: f.Name,
		RequiresAuth: !f.Public(), IsShared: f.Public(),
	})
}

// storedName is the file's name in storage: its ID with the extension of its name.
func storedName(f *files.File) string {
	if i := strings.LastIndexByte(f.Name, '.'); i >= 0 {
		return f.ID + f.Name[i:]
	}
	return f.ID
}

// Paging of the hosted list (spec 4.12, §8).
const (
	defaultPage  = 1
	defaultLimit = 20
	maxLimit     = 100
)

// pageParam reads a positive integer query parameter; bad values are a 400
// naming the parameter.
func pageParam(c echo.Context, name string, def, maxVal int) (int, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apierr.Invalid(name, "must be a positive integer")
	}
	if n > maxVal {
		return 0, apierr.Invalid(name, fmt.Sprintf("at most %d", maxVal))
	}
	return n, nil
}

// listHosted is GET /api/hosted-pdfs/list (spec 4.12): the caller's live
// hosted files as 2.3 objects, newest first (DESIGN §4.6).
func (s *Server) listHosted(c echo.Context) error {
	page, err := pageParam(c, "page", defaultPage, 1<<20)
	if err != nil {
		return err
	}
	limit, err := pageParam(c, "limit", defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	list, total, err := s.files.List(ctx, currentUser(c).ID, page, limit)
	if err != nil {
		return err
	}
	pdfs := make([]hostedMetadata, 0, len(list))
	for _, f := range list {
		m, err := s.metadataOf(ctx, f)
		if err != nil {
			return err
		}
		pdfs = append(pdfs, m)
	}
	return paged(c, "pdfs", pdfs, total, page, limit)
}

// paged answers one page of a list (spec 4.12's shape): the items under
// name, the total, and the pagination.
func paged(c echo.Context, name string, items any, total int64, page, limit int) error {
	return c.JSON(http.StatusOK, map[string]any{
		"success": true,
		"data":    map[string]any{name: items, "total": total},
		"pagination": map[string]any{
			"page": page, "limit": limit, "total": total, "totalPages": (total + int64(limit) - 1) / int64(limit),
		},
	})
}

// hostedStats is GET /api/hosted-pdfs/stats (spec 4.13, 2.6).
func (s *Server) hostedStats(c echo.Context) error {
	st, err := s.files.Stats(c.Request().Context(), currentUser(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": st})
}

// deleteHosted is DELETE /api/hosted-pdfs/:pdfId (spec 4.14): the owner
// only; afterwards every path answers 404 and the hosted slot is free.
func (s *Server) deleteHosted(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := s.files.Get(ctx, c.Param("pdfId"))
	if err != nil {
		return err
	}
	if f.OwnerID != currentUser(c).ID {
		return apierr.New(http.StatusForbidden, "This PDF belongs to another account.")
	}
	if err := s.files.Delete(ctx, f); err != nil {
		return err
	}
	logger(c).Info("stored file deleted", "file", f.ID)
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "Hosted PDF deleted."})
}
