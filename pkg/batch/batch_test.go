package batch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/usage"
	"github.com/docrender/docrender/proto/jobspb"
)

func TestEntryNames(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{[]string{"a", "b"}, []string{"a.pdf", "b.pdf"}},
		{[]string{"a", "a", "a"}, []string{"a.pdf", "a (2).pdf", "a (3).pdf"}},
		{[]string{"Report", "report", "REPORT"}, []string{"Report.pdf", "report (2).pdf", "REPORT (3).pdf"}},
		// A name that looks like a generated one is not overwritten.
		{[]string{"a", "a (2)", "a"}, []string{"a.pdf", "a (2).pdf", "a (3).pdf"}},
	}
	for _, tc := range tests {
		if got := EntryNames(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("EntryNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type fixture struct {
	tr *Tracker
	st state.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := boltstate.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := localblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return fixture{tr: New(st, nil, files.New(st, blobs), blobs, log), st: st}
}

func (f fixture) create(t *testing.T, total int) *Record {
	t.Helper()
	id := ids.New()
	r := &Record{ID: id, OwnerID: "u1", Name: "b", Total: total, ZipID: id, BaseURL: "https://docs.example",
		Retention: time.Hour, CreatedAt: time.Now()}
	names := make([]string, total)
	for i := range names {
		names[i] = "doc" + strconv.Itoa(i) + ".pdf"
	}
	charge, err := usage.New(f.st).Reserve(context.Background(), usage.Ask{ID: r.ID, Account: r.OwnerID, N: int64(total), Limit: 1000, Hold: time.Hour, Life: r.TTL()})
	if err != nil {
		t.Fatal(err)
	}
	r.Charge = charge
	if err := f.tr.Create(context.Background(), r, names); err != nil {
		t.Fatal(err)
	}
	return r
}

func (f fixture) usage(t *testing.T, r *Record) string {
	n, err := usage.New(f.st).Used(context.Background(), r.OwnerID)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(n, 10)
}

// Redelivered and concurrent reports count each document once: current
// never exceeds total and exactly one report sees the last document.
func TestDocDoneIsIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.create(t, 5)
	var mu sync.Mutex
	lastSeen := 0
	var wg sync.WaitGroup
	for range 3 { // every document reported three times, concurrently
		for i := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := f.tr.DocDone(ctx, r, i)
				if err != nil {
					t.Error(err)
					return
				}
				if n > 5 {
					t.Errorf("current %d over total", n)
				}
				if n == 5 {
					mu.Lock()
					lastSeen++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	p, err := f.tr.Progress(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if p != (Progress{Total: 5, Current: 5, Status: Processing, Message: "Generated 5/5 PDFs"}) {
		t.Errorf("progress %+v", p)
	}
	// Redeliveries after the last document also see 5: the ZIP job they
	// queue again is deduplicated, and a ZIP job of a completed batch is a no-op.
	if lastSeen < 1 {
		t.Error("nobody saw the last document")
	}
	if _, err := f.tr.DocDone(ctx, r, 5); err == nil {
		t.Error("document index out of range accepted")
	}
}

// Failing is first-writer-wins, and conversions of documents without a PDF
// are given back once each, however often reported.
func TestFailGivesBackOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.create(t, 4)
	if _, err := f.tr.DocDone(ctx, r, 0); err != nil {
		t.Fatal(err)
	}
	won, err := f.tr.Fail(ctx, r, "Document 1 failed")
	if err != nil || !won {
		t.Fatalf("first Fail: %v %v", won, err)
	}
	if won, _ := f.tr.Fail(ctx, r, "another reason"); won {
		t.Error("second Fail won")
	}
	for range 2 {
		for i := 1; i < 4; i++ {
			if err := f.tr.DocNotDone(ctx, r, i); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A document done before the failure stays counted, and is not given back.
	if err := f.tr.DocNotDone(ctx, r, 0); err != nil {
		t.Fatal(err)
	}
	if got := f.usage(t, r); got != "1" {
		t.Errorf("usage %s, want 1", got)
	}
	p, err := f.tr.Progress(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if p != (Progress{Total: 4, Current: 1, Status: Error, Message: "Document 1 failed"}) {
		t.Errorf("progress %+v", p)
	}
	if failed, _ := f.tr.Failed(ctx, r); !failed {
		t.Error("Failed = false")
	}
}

func TestCompleteMessages(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		host bool
		want func(r *Record, exp string) string
	}{
		{"download URL", false, func(r *Record, _ string) string {
			return "Download URL: https://docs.example/pdf/download/" + r.ID
		}},
		{"hosted JSON", true, func(r *Record, exp string) string {
			return `{"downloadUrl":"https://docs.example/api/hosted-pdfs/` + r.ZipID + `","zipId":"` + r.ZipID +
				`","expiresAt":"` + exp + `","documentsGenerated":2}`
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.create(t, 2)
			if tc.host {
				r.Host, r.ZipID, r.HostedExpiresAt = true, ids.New(), time.Now().Add(time.Hour)
			}
			zip := f.tr.ZipFile(r, 123)
			won, err := f.tr.Complete(ctx, r, zip)
			if err != nil || !won {
				t.Fatalf("Complete: %v %v", won, err)
			}
			if won, _ := f.tr.Complete(ctx, r, zip); won {
				t.Error("second Complete won")
			}
			p, err := f.tr.Progress(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			exp := apitime.Format(zip.ExpiresAt)
			if p.Status != Completed || p.Current != 2 || p.Message != tc.want(r, exp) {
				t.Errorf("progress %+v, want message %s", p, tc.want(r, exp))
			}
			if zip.Public() == !tc.host {
				t.Errorf("non-hosted ZIP public=%v", zip.Public())
			}
			if _, err := f.tr.Get(ctx, r.ID); err != nil {
				t.Errorf("record gone after completion: %v", err)
			}
		})
	}
}

func TestGetUnknown(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"", "short", ids.New(), "../../../../etc/passwd"} {
		if _, err := f.tr.Get(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

func TestSign(t *testing.T) {
	// HMAC-SHA256("hello", "key"), as computed by openssl dgst -sha256 -hmac key.
	const want = "sha256=9307b3b915efb5171ff14d8cb55fbcc798c6c0ef1456d66ded1a6aa723a58b7b"
	if got := Sign([]byte("hello"), "key"); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

func TestDeliverer(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/ok", http.StatusFound)
		}
	}))
	defer srv.Close()
	d := &jobspb.WebhookDelivery{DeliveryId: "b.batch.completed", Secret: "s", Body: []byte(`{"a":1}`), Event: EventCompleted}
	ctx := context.Background()

	blocked := NewDeliverer(netguard.New(nil))
	d.Url = srv.URL + "/ok"
	if err := blocked.Deliver(ctx, d, 1); !errors.Is(err, queue.ErrPermanent) {
		t.Errorf("loopback without allow-list: %v, want permanent", err)
	}
	allowed := NewDeliverer(netguard.New([]string{"127.0.0.1"}))
	tests := []struct {
		path    string
		wantErr bool
	}{{"/ok", false}, {"/fail", true}, {"/redirect", true}}
	for _, tc := range tests {
		d.Url = srv.URL + tc.path
		err := allowed.Deliver(ctx, d, 1)
		if (err != nil) != tc.wantErr || errors.Is(err, queue.ErrPermanent) {
			t.Errorf("%s: %v", tc.path, err)
		}
	}
	if got.Get(SignatureHeader) != Sign(d.Body, "s") || got.Get(DeliveryHeader) != d.DeliveryId {
		t.Errorf("headers %v", got)
	}
	d.Url = "http://[::1"
	if err := allowed.Deliver(ctx, d, 1); !errors.Is(err, queue.ErrPermanent) {
		t.Errorf("malformed URL: %v", err)
	}
	// A failed try's error is logged: the URL, which may carry a token,
	// is not in it (net/http puts it in its errors).
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, u := range []string{closed.URL + "/hook?token=SECRET-TOKEN", srv.URL + "/hook?token=SECRET-TOKEN"} {
		d.Url = u
		for _, dl := range []*Deliverer{blocked, allowed} {
			if err := dl.Deliver(ctx, d, 1); err != nil && strings.Contains(err.Error(), "SECRET-TOKEN") {
				t.Errorf("%s: error names the URL: %v", u, err)
			}
		}
	}
	d.Url = "http://[::1/hook?token=SECRET-TOKEN"
	if err := allowed.Deliver(ctx, d, 1); err == nil || strings.Contains(err.Error(), "SECRET-TOKEN") {
		t.Errorf("malformed URL with a token: %v", err)
	}
}

func TestCheckWebhookURL(t *testing.T) {
	policy := netguard.New([]string{"127.0.0.1:8443"})
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://127.0.0.1:8443/hook", true},
		{"http://127.0.0.1:8080/hook", false},
		{"http://10.1.2.3/hook", false},
		{"http://[fe80::1]/hook", false},
		{"ftp://example.com/", false},
		{"/relative", false},
		{"https://user:pw@127.0.0.1:8443/", false},
		// Zoned IPv6 literals matched no blocked prefix and were POSTed to.
		{"http://[::1%25lo]:8080/hook", false},
		{"http://[::1%251]:8080/hook", false},
		{"http://[fe80::1%25eth0]/hook", false},
		{"http://[::ffff:127.0.0.1]:8080/hook", false},
		{"http://[::]:8080/hook", false},
		{"http://0.0.0.0:8080/hook", false},
		{"http://169.254.169.254/latest/meta-data/", false},
		{"http://[fd00:ec2::254]/", false},
	}
	for _, tc := range tests {
		err := CheckWebhookURL(context.Background(), tc.url, policy)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.url, err)
		}
		if err != nil && !strings.Contains(err.Error(), "webhook.url") {
			t.Errorf("%s: error %v does not name webhook.url", tc.url, err)
		}
	}
}
