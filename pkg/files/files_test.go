package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// fixture is a Store over one state backend with a clock the test moves.
type fixture struct {
	*Store
	blobs blob.Store
	clock atomic.Int64 // unix nanoseconds
	owner string
}

func (f *fixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

func redisURL() string {
	if u := os.Getenv("DOCRENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// backends are the state stores every test runs against.
var backends = []struct {
	name string
	open func(t *testing.T) state.Store
}{
	{"bbolt", func(t *testing.T) state.Store {
		st, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"redis", func(t *testing.T) state.Store {
		// A prefix of its own keeps runs apart on the shared Redis.
		st, err := redisstate.Open(context.Background(), redisURL(), "filestest:"+rand.Text()[:10]+":")
		if err != nil {
			t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
		}
		return st
	}},
}

// eachBackend runs fn on a fresh fixture per state backend.
func eachBackend(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			t.Cleanup(func() { st.Close() })
			blobs, err := localblob.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{Store: New(st, blobs), blobs: blobs, owner: "usr_" + ids.New()}
			f.clock.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
			f.now = func() time.Time { return time.Unix(0, f.clock.Load()) }
			fn(t, f)
		})
	}
}

// store writes bytes and records a file of the fixture's owner.
func (f *fixture) store(t *testing.T, hosted bool, mod func(*File)) *File {
	t.Helper()
	ctx := context.Background()
	now := f.now()
	file := &File{ID: ids.New(), OwnerID: f.owner, Name: "doc.pdf", ContentType: "application/pdf",
		Hosted: hosted, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if mod != nil {
		mod(file)
	}
	data := []byte("%PDF-1.7 " + file.ID)
	file.Size = int64(len(data))
	if file.Hosted {
		if err := f.ReserveHosted(ctx, file.OwnerID, file.ID, file.ExpiresAt, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Track(ctx, file.ID, file.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	if err := f.blobs.Put(ctx, blob.FileKey(file.ID), bytes.NewReader(data), file.Size); err != nil {
		t.Fatal(err)
	}
	if err := f.Put(ctx, file); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ids.New()
		if !ids.Valid(id) || seen[id] {
			t.Fatalf("NewID gave %q (valid %v, repeated %v)", id, ids.Valid(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "short", strings.Repeat("a", 23), "AAAAAAAAAAAAAAAAAAAA/A", "../../../../etc/passwd", "list"} {
		if ids.Valid(bad) {
			t.Errorf("ids.Valid(%q) = true", bad)
		}
	}
}

func TestAuthorize(t *testing.T) {
	tests := []struct {
		name     string
		userType string
		viewer   string
		want     error
	}{
		{"public anonymous", "", "", nil},
		{"guest anonymous", "guest", "", nil},
		{"guest other account", "guest", "usr_other", nil},
		{"private owner", "registered", "usr_owner", nil},
		{"private anonymous", "registered", "", ErrPrivate},
		{"private other account", "registered", "usr_other", ErrForeign},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &File{OwnerID: "usr_owner", UserType: tc.userType}
			if got := Authorize(f, tc.viewer); got != tc.want {
				t.Fatalf("Authorize = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPutGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		file := f.store(t, true, nil)
		got, err := f.Get(ctx, file.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != file.ID || got.RecordID == "" || got.RecordID == got.ID || got.Size != file.Size || !got.ExpiresAt.Equal(file.ExpiresAt) {
			t.Fatalf("Get = %+v, want %+v with a record ID of its own", got, file)
		}
		for name, id := range map[string]string{"unknown": ids.New(), "malformed": "not-an-id", "empty": ""} {
			if _, err := f.Get(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s ID: %v, want 404", name, err)
			}
		}
		f.advance(time.Hour) // exactly at expiry: gone
		if _, err := f.Get(ctx, file.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("expired: %v, want 404", err)
		}
	})
}

func TestHostedSlots(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		exp := f.now().Add(time.Hour)
		a, b, c := ids.New(), ids.New(), ids.New()
		for _, id := range []string{a, b} {
			if err := f.ReserveHosted(ctx, f.owner, id, exp, 2); err != nil {
				t.Fatal(err)
			}
		}
		err := f.ReserveHosted(ctx, f.owner, c, exp, 2)
		var full *HostedLimitError
		if !errors.As(err, &full) || full.Limit != 2 {
			t.Fatalf("third slot: %v, want the hosted limit of 2", err)
		}
		if err := f.ReserveHosted(ctx, "usr_someone_else", c, exp, 2); err != nil {
			t.Fatalf("limits are per owner: %v", err)
		}
		if err := f.ReleaseHosted(ctx, f.owner, a); err != nil {
			t.Fatal(err)
		}
		if err := f.ReserveHosted(ctx, f.owner, c, exp, 2); err != nil {
			t.Fatalf("after release: %v", err)
		}
		if n, _ := f.HostedCount(ctx, f.owner); n != 2 {
			t.Fatalf("HostedCount = %d, want 2", n)
		}
		// A higher limit (a plan change) applies at the next reservation.
		if err := f.ReserveHosted(ctx, f.owner, ids.New(), exp, 3); err != nil {
			t.Fatalf("raised limit: %v", err)
		}
		// Expired slots count no more.
		f.advance(time.Hour)
		if n, _ := f.HostedCount(ctx, f.owner); n != 0 {
			t.Fatalf("HostedCount after expiry = %d, want 0", n)
		}
		if err := f.ReserveHosted(ctx, f.owner, ids.New(), f.now().Add(time.Hour), 1); err != nil {
			t.Fatalf("after expiry: %v", err)
		}
	})
}

// A request's slot holds only until shortly after the request ends: a
// gateway that died before storing its file frees the slot then; a stored
// file holds it until the file expires.
func TestPendingHostedSlotsExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		pending, stored := ids.New(), ids.New()
		until := f.now().Add(10 * time.Minute)
		for _, id := range []string{pending, stored} {
			if err := f.ReserveHosted(ctx, f.owner, id, until, 2); err != nil {
				t.Fatal(err)
			}
		}
		now := f.now()
		file := &File{ID: stored, OwnerID: f.owner, Name: "a.pdf", ContentType: "application/pdf",
			Hosted: true, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
		if err := f.Put(ctx, file); err != nil {
			t.Fatal(err)
		}
		f.advance(11 * time.Minute)
		if n, _ := f.HostedCount(ctx, f.owner); n != 1 {
			t.Fatalf("HostedCount = %d, want 1 (the stored file; the dead request's slot freed)", n)
		}
		if err := f.ReserveHosted(ctx, f.owner, ids.New(), f.now().Add(time.Minute), 2); err != nil {
			t.Fatalf("the freed slot: %v", err)
		}
	})
}

func TestHostedSlotsConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		var ok atomic.Int64
		var wg sync.WaitGroup
		for range 30 {
			wg.Go(func() {
				if f.ReserveHosted(context.Background(), f.owner, ids.New(), f.now().Add(time.Hour), 5) == nil {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 5 {
			t.Fatalf("%d reservations succeeded under a limit of 5", ok.Load())
		}
	})
}

func TestDownloadsConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		file := f.store(t, true, nil)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, err := f.CountDownload(context.Background(), file); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n, err := f.Downloads(context.Background(), file.ID); err != nil || n != 20 {
			t.Fatalf("Downloads = %d, %v; want 20", n, err)
		}
		if n, _ := f.Downloads(context.Background(), ids.New()); n != 0 {
			t.Fatalf("Downloads of an unknown file = %d", n)
		}
	})
}

func TestDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		file := f.store(t, true, nil)
		keep := f.store(t, true, nil)
		if _, err := f.CountDownload(ctx, file); err != nil {
			t.Fatal(err)
		}
		if err := f.Delete(ctx, file); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Get(ctx, file.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get after delete: %v", err)
		}
		if _, err := f.blobs.Stat(ctx, blob.FileKey(file.ID)); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("bytes after delete: %v", err)
		}
		if n, _ := f.Downloads(ctx, file.ID); n != 0 {
			t.Fatalf("counter after delete = %d", n)
		}
		if n, _ := f.HostedCount(ctx, f.owner); n != 1 {
			t.Fatalf("HostedCount = %d, want 1", n)
		}
		list, total, err := f.List(ctx, f.owner, 1, 20)
		if err != nil || total != 1 || len(list) != 1 || list[0].ID != keep.ID {
			t.Fatalf("List = %v, %d, %v", list, total, err)
		}
		if err := f.Delete(ctx, file); err != nil {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestListAndStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			file := f.store(t, true, nil)
			ids = append(ids, file.ID)
			for range i {
				if _, err := f.CountDownload(ctx, file); err != nil {
					t.Fatal(err)
				}
			}
			f.advance(time.Second)
		}
		f.store(t, false, nil)                                                         // not hosted: not listed
		f.store(t, true, func(x *File) { x.OwnerID = "usr_other" })                    // someone else's
		f.store(t, true, func(x *File) { x.ExpiresAt = x.CreatedAt.Add(time.Second) }) // expires below
		f.advance(2 * time.Second)
		tests := []struct {
			page, limit int
			want        []string
		}{
			{1, 2, []string{ids[4], ids[3]}},
			{2, 2, []string{ids[2], ids[1]}},
			{3, 2, []string{ids[0]}},
			{4, 2, nil},
			{1, 20, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		}
		for _, tc := range tests {
			list, total, err := f.List(ctx, f.owner, tc.page, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range list {
				got = append(got, x.ID)
			}
			if total != 5 || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("page %d limit %d: %v total %d, want %v total 5", tc.page, tc.limit, got, total, tc.want)
			}
		}
		st, err := f.Stats(ctx, f.owner)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len("%PDF-1.7 ") + 22)
		if want := (Stats{TotalHosted: 5, TotalDownloads: 0 + 1 + 2 + 3 + 4, TotalSize: 5 * size}); st != want {
			t.Fatalf("Stats = %+v, want %+v", st, want)
		}
	})
}

func TestCache(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		doc := func(hash string) func(*File) {
			return func(x *File) { x.DocumentID, x.InputHash = "invoice-42", hash }
		}
		old := f.store(t, false, doc("h1"))
		if err := f.SetCache(ctx, old); err != nil {
			t.Fatal(err)
		}
		if got, err := f.LookupCache(ctx, f.owner, "invoice-42", "h1"); err != nil || got == nil || got.ID != old.ID {
			t.Fatalf("hit: %v, %v", got, err)
		}
		for name, q := range map[string][3]string{
			"other inputs":  {f.owner, "invoice-42", "h2"},
			"other ID":      {f.owner, "invoice-43", "h1"},
			"other account": {"usr_other", "invoice-42", "h1"},
		} {
			if got, err := f.LookupCache(ctx, q[0], q[1], q[2]); err != nil || got != nil {
				t.Errorf("%s: %v, %v; want a miss", name, got, err)
			}
		}
		// Regeneration: the new file takes the ID, then the old one goes.
		nu := f.store(t, false, doc("h2"))
		if prev, err := f.PreviousCache(ctx, f.owner, "invoice-42"); err != nil || prev == nil || prev.ID != old.ID {
			t.Fatalf("PreviousCache = %v, %v", prev, err)
		}
		if err := f.SetCache(ctx, nu); err != nil {
			t.Fatal(err)
		}
		if err := f.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.LookupCache(ctx, f.owner, "invoice-42", "h2"); got == nil || got.ID != nu.ID {
			t.Fatalf("deleting the replaced file dropped the new cache entry: %v", got)
		}
		// Deleting the current file forgets the entry.
		if err := f.Delete(ctx, nu); err != nil {
			t.Fatal(err)
		}
		if prev, _ := f.PreviousCache(ctx, f.owner, "invoice-42"); prev != nil {
			t.Fatalf("entry survived its file: %v", prev)
		}
		// An expired cached file is a miss.
		x := f.store(t, false, doc("h3"))
		if err := f.SetCache(ctx, x); err != nil {
			t.Fatal(err)
		}
		f.advance(time.Hour)
		if got, _ := f.LookupCache(ctx, f.owner, "invoice-42", "h3"); got != nil {
			t.Fatalf("expired file is a hit: %v", got)
		}
	})
}

func TestSweep(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		gone := f.store(t, true, func(x *File) { x.ExpiresAt = x.CreatedAt.Add(time.Minute) })
		live := f.store(t, true, nil)
		// Bytes of a render that was never recorded.
		stray := ids.New()
		if err := f.Track(ctx, stray, f.now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := f.blobs.Put(ctx, blob.FileKey(stray), strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		if n, err := f.Sweep(ctx, 100); err != nil || n != 0 {
			t.Fatalf("Sweep before expiry = %d, %v", n, err)
		}
		f.advance(2 * time.Minute)
		if n, err := f.Sweep(ctx, 100); err != nil || n != 2 {
			t.Fatalf("Sweep = %d, %v; want 2", n, err)
		}
		for _, id := range []string{gone.ID, stray} {
			if _, err := f.blobs.Stat(ctx, blob.FileKey(id)); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("bytes of %s survived the sweep: %v", id, err)
			}
		}
		rc, _, err := f.blobs.Get(ctx, blob.FileKey(live.ID))
		if err != nil {
			t.Fatalf("live file swept: %v", err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.HasPrefix(b, []byte("%PDF")) {
			t.Fatalf("live bytes = %q", b)
		}
		if n, _ := f.Sweep(ctx, 100); n != 0 {
			t.Fatalf("second sweep deleted %d", n)
		}
	})
}

func TestRunSweeperStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		f.store(t, false, func(x *File) { x.ExpiresAt = x.CreatedAt.Add(time.Second) })
		f.advance(time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			f.RunSweeper(ctx, time.Hour, func(err error) { t.Error(err) })
			close(done)
		}()
		// The first round runs at once, not after the interval.
		deadline := time.Now().Add(5 * time.Second)
		for {
			ids, _ := f.st.IndexRange(context.Background(), expiryIndex, state.MinScore, state.MaxScore, 0, -1, false)
			if len(ids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweeper did not sweep at start")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
	})
}
