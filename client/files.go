package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Stored files: hosted PDFs and ZIPs, cached documents and stream batch
// ZIPs share one ID space (DESIGN §4.3). Public files need no credential;
// a private one (userType "registered") is its owner's, by API key or session.

func (c *Client) getFile(ctx context.Context, prefix, id string) (*Download, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &request{method: http.MethodGet, path: prefix + esc, auth: authViewer})
	if err != nil {
		return nil, err
	}
	return newDownload(resp), nil
}

// ViewFile fetches a stored file as the browser's inline view does (GET /pdf/view/:id).
func (c *Client) ViewFile(ctx context.Context, id string) (*Download, error) {
	return c.getFile(ctx, "/pdf/view/", id)
}

// DownloadFile fetches a stored file as an attachment (GET /pdf/download/:id).
func (c *Client) DownloadFile(ctx context.Context, id string) (*Download, error) {
	return c.getFile(ctx, "/pdf/download/", id)
}

// HostedFile fetches a hosted file by its link (GET /api/hosted-pdfs/:pdfId).
// Each retrieval counts a download.
func (c *Client) HostedFile(ctx context.Context, pdfID string) (*Download, error) {
	return c.getFile(ctx, "/api/hosted-pdfs/", pdfID)
}

// HostedMetadata describes a hosted file (spec 2.3).
type HostedMetadata struct {
	ID           string    `json:"id"`
	PdfID        string    `json:"pdfId"`
	OriginalName string    `json:"originalName"`
	FileSize     int64     `json:"fileSize"`
	URL          string    `json:"url"`
	ExpiresAt    time.Time `json:"expiresAt"`
	IsPublic     bool      `json:"isPublic"`
	Downloads    int64     `json:"downloads"`
	CreatedAt    time.Time `json:"createdAt"`
}

// FileMetadata returns a hosted file's metadata (GET /api/hosted-pdfs/:pdfId/metadata).
func (c *Client) FileMetadata(ctx context.Context, pdfID string) (*HostedMetadata, error) {
	esc, err := pathEscape(pdfID)
	if err != nil {
		return nil, err
	}
	var m HostedMetadata
	return &m, c.doJSON(ctx, &request{method: http.MethodGet, path: "/api/hosted-pdfs/" + esc + "/metadata", auth: authViewer}, &m)
}

// SharedMetadata is what a shared link's page needs (spec 2.4).
type SharedMetadata struct {
	UserType     string    `json:"userType"`
	Expires      time.Time `json:"expires"`
	FileName     string    `json:"fileName"`
	OriginalName string    `json:"originalName"`
	RequiresAuth bool      `json:"requiresAuth"`
	IsShared     bool      `json:"isShared"`
}

// SharedMetadata returns a stored file's shared metadata (GET /pdf/metadata/:id).
func (c *Client) SharedMetadata(ctx context.Context, id string) (*SharedMetadata, error) {
	esc, err := pathEscape(id)
	if err != nil {
		return nil, err
	}
	var m SharedMetadata
	return &m, c.doJSON(ctx, &request{method: http.MethodGet, path: "/pdf/metadata/" + esc, auth: authViewer}, &m)
}

// Pagination describes one page of a list.
type Pagination struct {
	Page       int   `json:"page"`
	Limit      int   `json:"limit"`
	Total      int64 `json:"total"`
	TotalPages int64 `json:"totalPages"`
}

// HostedList is one page of the signed-in user's hosted files, newest first.
type HostedList struct {
	PDFs       []HostedMetadata
	Total      int64
	Pagination Pagination
}

func pageQuery(page, limit int) url.Values {
	q := url.Values{}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// ListHosted lists the user's live hosted files (GET /api/hosted-pdfs/list;
// needs a session). page and limit 0 take the defaults (1 and 20; limit at most 100).
func (c *Client) ListHosted(ctx context.Context, page, limit int) (*HostedList, error) {
	var out struct {
		Data struct {
			PDFs  []HostedMetadata `json:"pdfs"`
			Total int64            `json:"total"`
		} `json:"data"`
		Pagination Pagination `json:"pagination"`
	}
	err := c.doJSON(ctx, &request{method: http.MethodGet, path: "/api/hosted-pdfs/list", query: pageQuery(page, limit), auth: authSession}, &out)
	if err != nil {
		return nil, err
	}
	return &HostedList{PDFs: out.Data.PDFs, Total: out.Data.Total, Pagination: out.Pagination}, nil
}

// HostedStats are the user's hosting totals (spec 2.6).
type HostedStats struct {
	TotalHosted    int64 `json:"totalHosted"`
	TotalDownloads int64 `json:"totalDownloads"`
	TotalSize      int64 `json:"totalSize"`
}

// HostedStats returns the user's hosting totals (GET /api/hosted-pdfs/stats; needs a session).
func (c *Client) HostedStats(ctx context.Context) (*HostedStats, error) {
	s, err := getData[HostedStats](ctx, c, &request{method: http.MethodGet, path: "/api/hosted-pdfs/stats", auth: authSession})
	return &s, err
}

// DeleteHosted deletes a hosted file and frees its slot (DELETE
// /api/hosted-pdfs/:pdfId; needs the owner's session).
func (c *Client) DeleteHosted(ctx context.Context, pdfID string) error {
	esc, err := pathEscape(pdfID)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, &request{method: http.MethodDelete, path: "/api/hosted-pdfs/" + esc, auth: authSession}, nil)
}
