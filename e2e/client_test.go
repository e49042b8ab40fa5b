package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	drclient "github.com/docrender/docrender/client"
	"github.com/docrender/docrender/pkg/config"
)

// newAPIClient registers a fresh user through the Go client and gives the
// client an API key made with it.
func newAPIClient(t *testing.T, svc *service) *drclient.Client {
	t.Helper()
	ctx := context.Background()
	c, err := drclient.New(svc.URL)
	if err != nil {
		t.Fatal(err)
	}
	email := fmt.Sprintf("client-%d@example.com", time.Now().UnixNano())
	s, err := c.Register(ctx, email, "correct horse battery")
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if s.Token == "" || s.User.Email != email || c.SessionToken() != s.Token {
		t.Fatalf("session %+v", s)
	}
	k, err := c.CreateKey(ctx, "client test", nil)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if !strings.HasPrefix(k.Key, "drk_") {
		t.Fatalf("key %+v", k)
	}
	c.SetAPIKey(k.Key)
	return c
}

func zipNames(t *testing.T, b []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a ZIP (%d bytes): %v", len(b), err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// mustBytes reads the file of a call that returns one: mustBytes(t)(c.Generate(...)).
func mustBytes(t *testing.T) func(*drclient.Download, error) []byte {
	return func(d *drclient.Download, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := d.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func wantAPIError(t *testing.T, err error, status int, code string) *drclient.Error {
	t.Helper()
	var e *drclient.Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v (%T), want *client.Error %d %s", err, err, status, code)
	}
	if e.StatusCode != status || e.Code != code || e.Message == "" {
		t.Fatalf("error %+v, want %d %s with a message", e, status, code)
	}
	return e
}

// TestClientEndToEnd drives every kind of call of the client (client/) against the
// real embedded service: accounts and keys, generate (files with assets,
// print options, hosted), a batch followed over SSE, a hosted batch over
// the channel, synchronous batches, merge, QR codes read back by zbarimg,
// the hosted files' list, stats and delete, usage and plans, and errors
// decoded with their codes.
func TestClientEndToEnd(t *testing.T) {
	svc := sharedService(t)
	c := newAPIClient(t, svc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conversions := int64(0)

	u0, err := c.Usage(ctx)
	if err != nil || u0.ConversionsUsed != 0 || u0.Plan != "hobby" {
		t.Fatalf("usage at start %+v %v", u0, err)
	}

	// A page with a stylesheet by relative path, two pages long, Letter,
	// with a footer and a title.
	page := `<html><head><title>t</title><link rel="stylesheet" href="css/site.css"></head><body>
		<h1>First</h1><div class="break"></div><h1>Second</h1></body></html>`
	pdf := mustBytes(t)(c.Generate(ctx, drclient.GenerateRequest{
		Files: []drclient.Upload{
			drclient.UploadBytes("index.html", []byte(page)),
			drclient.UploadBytes("css/site.css", []byte(".break{page-break-after:always}")),
		},
		Options: &drclient.PDFOptions{
			FileName: "two-pages", Format: "Letter", Margin: &drclient.Margin{Top: "2cm", Bottom: "2cm"},
			PrintOptions: drclient.PrintOptions{
				FooterTemplate: `<div style="font-size:9px">Page <span class="pageNumber"></span></div>`,
				Metadata:       &drclient.Metadata{Title: "Client title", Author: "docrender/client"},
				Outline:        true,
			},
		},
	}))
	conversions++
	pi := info(t, pdf)
	if pi.Pages != 2 || !near(pi.Width, 612, 1) || !near(pi.Height, 792, 1) {
		t.Fatalf("generated PDF %+v, want 2 Letter pages (the asset's page break)", pi)
	}
	if out := run(t, "pdfinfo", writeTemp(t, pdf, ".pdf")); !strings.Contains(out, "Client title") || !strings.Contains(out, "docrender/client") {
		t.Errorf("metadata not in pdfinfo:\n%s", out)
	}

	// The report header of a render is read into Download.Report.
	d, err := c.Generate(ctx, drclient.GenerateRequest{Files: []drclient.Upload{drclient.UploadBytes("index.html", []byte("<p>report</p>"))}})
	if err != nil {
		t.Fatal(err)
	}
	conversions++
	if d.Report == nil || d.Report.Pages != 1 || d.Name != "document.pdf" {
		t.Errorf("download %+v report %+v", d, d.Report)
	}
	d.Body.Close()

	// Hosted: the link, its metadata, its bytes.
	h, err := c.GenerateHosted(ctx, drclient.GenerateRequest{
		Files:   []drclient.Upload{drclient.UploadBytes("index.html", []byte("<h1>hosted</h1>"))},
		Options: &drclient.PDFOptions{FileName: "hosted-one"},
	})
	if err != nil {
		t.Fatal(err)
	}
	conversions++
	if h.PdfID == "" || h.URL != svc.URL+"/api/hosted-pdfs/"+h.PdfID || h.ExpiresAt.Before(time.Now()) || h.Report == nil || h.Report.Pages != 1 {
		t.Fatalf("hosted %+v", h)
	}
	if pi := info(t, mustBytes(t)(c.HostedFile(ctx, h.PdfID))); pi.Pages != 1 {
		t.Errorf("hosted file %+v", pi)
	}
	if pi := info(t, mustBytes(t)(c.ViewFile(ctx, h.PdfID))); pi.Pages != 1 {
		t.Errorf("viewed file %+v", pi)
	}
	md, err := c.FileMetadata(ctx, h.PdfID)
	if err != nil || md.PdfID != h.PdfID || md.OriginalName != "hosted-one.pdf" || md.Downloads != 2 || !md.IsPublic {
		t.Errorf("metadata %+v %v", md, err)
	}
	sm, err := c.SharedMetadata(ctx, h.PdfID)
	if err != nil || sm.OriginalName != "hosted-one.pdf" || sm.RequiresAuth {
		t.Errorf("shared metadata %+v %v", sm, err)
	}

	// A batch followed over SSE to completion, then its ZIP.
	docs := []drclient.BatchDocument{
		{FileName: "a", HTMLContent: "<h1>A</h1>"},
		{FileName: "b", HTMLContent: "<h1>B</h1>"},
		{FileName: "c", HTMLContent: "<h1>C</h1>", PrintOptions: &drclient.PrintOptions{Scale: 0.5}},
	}
	started, err := c.StartBatch(ctx, drclient.BatchRequest{Documents: docs, BatchName: "client-batch"})
	if err != nil {
		t.Fatal(err)
	}
	conversions += 3
	if started.BatchID == "" || started.Total != 3 {
		t.Fatalf("started %+v", started)
	}
	var seen []drclient.Progress
	final, err := c.FollowBatch(ctx, started.BatchID, func(p drclient.Progress) { seen = append(seen, p) })
	if err != nil || final.Status != drclient.StatusCompleted || final.Current != 3 {
		t.Fatalf("followed to %+v, %v (saw %+v)", final, err, seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Current < seen[i-1].Current || seen[i].Total != 3 {
			t.Errorf("progress went %+v then %+v", seen[i-1], seen[i])
		}
	}
	bc, err := final.Completion()
	if err != nil || bc.DownloadURL != svc.URL+"/pdf/download/"+started.BatchID {
		t.Errorf("completion %+v %v", bc, err)
	}
	if names := zipNames(t, mustBytes(t)(c.DownloadBatch(ctx, started.BatchID))); fmt.Sprint(names) != "[a.pdf b.pdf c.pdf]" {
		t.Errorf("batch ZIP holds %v", names)
	}
	if p, err := c.Progress(ctx, started.BatchID); err != nil || p.Status != drclient.StatusCompleted || p.Total != 3 {
		t.Errorf("polled progress %+v %v", p, err)
	}

	// A hosted batch followed on the channel.
	hs, err := c.StartBatch(ctx, drclient.BatchRequest{Documents: docs[:2], Host: true})
	if err != nil {
		t.Fatal(err)
	}
	conversions += 2
	var last drclient.ProgressEvent
	for ev := range c.ProgressEvents(ctx, hs.BatchID) {
		last = ev
	}
	if !last.Done || last.Err != nil || last.Progress.Status != drclient.StatusCompleted {
		t.Fatalf("channel ended with %+v", last)
	}
	hbc, err := last.Progress.Completion()
	if err != nil || hbc.ZipID == "" || hbc.DocumentsGenerated != 2 {
		t.Fatalf("hosted completion %+v %v", hbc, err)
	}
	if names := zipNames(t, mustBytes(t)(c.HostedFile(ctx, hbc.ZipID))); len(names) != 2 {
		t.Errorf("hosted ZIP holds %v", names)
	}

	// Synchronous batches: the ZIP itself, and hosted.
	zipBytes := mustBytes(t)(c.GenerateBatch(ctx, drclient.BatchRequest{Documents: docs[:1]}))
	conversions++
	if names := zipNames(t, zipBytes); fmt.Sprint(names) != "[a.pdf]" {
		t.Errorf("sync ZIP holds %v", names)
	}
	hz, err := c.GenerateBatchHosted(ctx, drclient.BatchRequest{Documents: docs[:1]})
	if err != nil || !hz.Success || hz.DocumentsGenerated != 1 || hz.ZipID == "" {
		t.Fatalf("sync hosted batch %+v %v", hz, err)
	}
	conversions++

	// Merge: 2 + 1 pages.
	single := c2pdf(t, c, "<p>one</p>")
	conversions++
	md2, err := c.Merge(ctx, drclient.MergeRequest{
		Files:   []drclient.Upload{drclient.UploadBytes("two.pdf", pdf), drclient.UploadBytes("one.pdf", single)},
		Options: &drclient.MergeOptions{FileName: "merged"},
	})
	if err != nil {
		t.Fatal(err)
	}
	conversions++
	if md2.Pages != 3 || md2.Name != "merged.pdf" {
		t.Errorf("merge answer %+v", md2)
	}
	if pi := info(t, mustBytes(t)(md2, nil)); pi.Pages != 3 {
		t.Errorf("merged PDF %+v", pi)
	}

	// QR codes, read back by zbarimg.
	png, err := c.QRCode(ctx, drclient.QRRequest{Data: "https://example.com/client", Size: 300, ErrorCorrectionLevel: "H"})
	if err != nil {
		t.Fatal(err)
	}
	if got := zbarCodes(t, png, 50); len(got) != 1 || got[0] != "https://example.com/client" {
		t.Errorf("zbarimg read %q", got)
	}
	if du, err := c.QRCodeDataURL(ctx, drclient.QRRequest{Data: "x"}); err != nil || !strings.HasPrefix(du, "data:image/png;base64,") {
		t.Errorf("data URL %.40q %v", du, err)
	}

	// The hosted list, stats and delete.
	list, err := c.ListHosted(ctx, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range list.PDFs {
		ids = append(ids, p.PdfID)
	}
	if !slices.Contains(ids, h.PdfID) || !slices.Contains(ids, hbc.ZipID) || list.Total != 3 || list.Pagination.Limit != 100 {
		t.Fatalf("list %+v (ids %v), want the hosted PDF and both hosted ZIPs", list, ids)
	}
	if st, err := c.HostedStats(ctx); err != nil || st.TotalHosted != 3 || st.TotalDownloads < 3 || st.TotalSize <= 0 {
		t.Errorf("stats %+v %v", st, err)
	}
	if err := c.DeleteHosted(ctx, h.PdfID); err != nil {
		t.Fatal(err)
	}
	_, err = c.HostedFile(ctx, h.PdfID)
	wantAPIError(t, err, http.StatusNotFound, drclient.CodeNotFound)
	if list, err := c.ListHosted(ctx, 0, 0); err != nil || list.Total != 2 || list.Pagination.Limit != 20 {
		t.Errorf("list after delete %+v %v", list, err)
	}

	// Usage moved by exactly what was rendered; the hosted count by what is live.
	u1, err := c.Usage(ctx)
	if err != nil || u1.ConversionsUsed != conversions || u1.HostedCount != 2 || u1.ConversionsLimit != u0.ConversionsLimit {
		t.Errorf("usage %+v %v, want %d conversions and 2 hosted", u1, err, conversions)
	}

	// Errors come back decoded, with their codes.
	_, err = c.Generate(ctx, drclient.GenerateRequest{
		Files:   []drclient.Upload{drclient.UploadBytes("index.html", []byte("<p>x</p>"))},
		Options: &drclient.PDFOptions{PrintOptions: drclient.PrintOptions{Scale: 5}},
	})
	if e := wantAPIError(t, err, http.StatusBadRequest, drclient.CodeBadRequest); e.Field != "scale" {
		t.Errorf("bad scale error %+v names no field", e)
	}
	_, err = c.Generate(ctx, drclient.GenerateRequest{Files: []drclient.Upload{drclient.UploadBytes("notes.txt", []byte("x"))}})
	if e := wantAPIError(t, err, http.StatusBadRequest, drclient.CodeBadRequest); len(e.ReceivedFiles) != 1 || e.Hint == "" {
		t.Errorf("no-HTML error %+v", e)
	}
	p, err := c.Progress(ctx, "no-such-batch")
	wantAPIError(t, err, http.StatusNotFound, drclient.CodeNotFound)
	if p == nil || p.Status != drclient.StatusNotFound {
		t.Errorf("unknown batch record %+v", p)
	}
	_, err = c.FollowBatch(ctx, "no-such-batch", nil)
	wantAPIError(t, err, http.StatusNotFound, drclient.CodeNotFound)
	bad, _ := drclient.New(svc.URL, drclient.WithAPIKey("drk_"+strings.Repeat("x", 40)))
	_, err = bad.QRCode(ctx, drclient.QRRequest{Data: "x"})
	if e := wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized); e.Message != "Invalid or expired API key." {
		t.Errorf("401 message %q", e.Message)
	}
	_, err = c.ChangePlan(ctx, "no-such-plan")
	if err == nil {
		t.Error("change to an unknown plan accepted")
	}

	// Plans, keys and the session.
	sub, err := c.ChangePlan(ctx, "pro")
	if err != nil || sub.Plan != "pro" || sub.Limits.MaxBatch <= 0 {
		t.Errorf("change plan %+v %v", sub, err)
	}
	if sub, err := c.Subscription(ctx); err != nil || sub.Plan != "pro" {
		t.Errorf("subscription %+v %v", sub, err)
	}
	me, err := c.Me(ctx)
	if err != nil || me.Plan != "pro" {
		t.Errorf("me %+v %v", me, err)
	}
	keys, err := c.ListKeys(ctx)
	if err != nil || len(keys) != 1 || keys[0].Key != "" {
		t.Fatalf("keys %+v %v", keys, err)
	}
	if err := c.RevokeKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.QRCode(ctx, drclient.QRRequest{Data: "x"})
	wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized)
	if err := c.Logout(ctx); err != nil || c.SessionToken() != "" {
		t.Fatalf("logout %v", err)
	}
	_, err = c.Me(ctx)
	wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized)
}

// c2pdf renders html through the client and returns the PDF.
func c2pdf(t *testing.T, c *drclient.Client, html string) []byte {
	t.Helper()
	return mustBytes(t)(c.Generate(context.Background(), drclient.GenerateRequest{
		Files: []drclient.Upload{drclient.UploadBytes("index.html", []byte(html))}}))
}

// TestClientAdminAndAccount covers the operator's routes and deleting an
// account, on a service with an admin token.
func TestClientAdminAndAccount(t *testing.T) {
	const token = "client-admin-token-0123456789"
	svc := startService(t, func(cfg *config.Config) { cfg.AdminToken = token })
	ctx := context.Background()
	c := newAPIClient(t, svc)
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(ctx); err != nil {
		t.Errorf("healthz: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("readyz: %v", err)
	}
	admin, _ := drclient.New(svc.URL, drclient.WithAdminToken(token))
	list, err := admin.AdminListAccounts(ctx, 1, 10, me.Email)
	if err != nil || list.Total != 1 || len(list.Accounts) != 1 || list.Accounts[0].ID != me.ID {
		t.Fatalf("admin list %+v %v", list, err)
	}
	plan := "enterprise"
	a, err := admin.AdminPatchAccount(ctx, me.ID, drclient.AccountPatch{Plan: &plan, Disabled: drclient.Bool(true)})
	if err != nil || a.Plan != "enterprise" || !a.Disabled {
		t.Fatalf("patch %+v %v", a, err)
	}
	_, err = c.QRCode(ctx, drclient.QRRequest{Data: "x"})
	wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized)
	if _, err := admin.AdminPatchAccount(ctx, me.ID, drclient.AccountPatch{Disabled: drclient.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	_, err = admin.AdminPatchAccount(ctx, "no-such-account", drclient.AccountPatch{Plan: &plan})
	wantAPIError(t, err, http.StatusNotFound, drclient.CodeNotFound)
	wrong, _ := drclient.New(svc.URL, drclient.WithAdminToken("wrong"))
	_, err = wrong.AdminListAccounts(ctx, 0, 0, "")
	wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized)

	if err := c.DeleteAccount(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(ctx)
	wantAPIError(t, err, http.StatusUnauthorized, drclient.CodeUnauthorized)
	if m, err := c.Metrics(ctx); err != nil || !strings.Contains(m, "# HELP") {
		t.Errorf("metrics %.80q %v", m, err)
	}
}
