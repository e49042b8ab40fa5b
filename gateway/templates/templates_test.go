package templates

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// The store's contract, on each state backend: versions that never
// change, concurrent uploads of one name, privacy, the plan's limit,
// paging, delete with its grace.

const grace = time.Hour

type fixture struct {
	*Store
	st    state.Store
	blobs blob.Store
	clock atomic.Int64
	owner string
}

func (f *fixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

func redisURL() string {
	if u := os.Getenv("DOCRENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

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
		st, err := redisstate.Open(context.Background(), redisURL(), "tpltest:"+rand.Text()[:10]+":")
		if err != nil {
			t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
		}
		return st
	}},
}

func eachBackend(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			t.Cleanup(func() { st.Close() })
			blobs, err := localblob.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{Store: New(st, blobs, grace), st: st, blobs: blobs, owner: "usr_" + ids.New()}
			f.clock.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
			f.now = func() time.Time { return time.Unix(0, f.clock.Load()) }
			fn(t, f)
		})
	}
}

// upload puts files (name → content) in a temporary folder and returns
// the Upload of them as owner's template name.
func (f *fixture) upload(t *testing.T, owner, name string, files map[string]string) Upload {
	t.Helper()
	from := blob.JobInputs(ids.New())
	up := Upload{Owner: owner, Name: name, Limit: math.MaxInt64, From: from, Entry: "index.html", Lang: "de"}
	for _, n := range slices.Sorted(mapsKeys(files)) {
		if err := f.blobs.Put(context.Background(), from+n, strings.NewReader(files[n]), int64(len(files[n]))); err != nil {
			t.Fatal(err)
		}
		up.Files = append(up.Files, File{Name: n, Size: int64(len(files[n]))})
	}
	return up
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (f *fixture) put(t *testing.T, owner, name string, files map[string]string) (*Template, Version) {
	t.Helper()
	tp, v, err := f.Put(context.Background(), f.upload(t, owner, name, files))
	if err != nil {
		t.Fatal(err)
	}
	return tp, v
}

func (f *fixture) read(t *testing.T, key string) (string, error) {
	t.Helper()
	rc, _, err := f.blobs.Get(context.Background(), key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

func TestCleanName(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "invoice", want: "invoice"},
		{in: "  Rechnung Ü 2030 ", want: "Rechnung Ü 2030"},
		{in: strings.Repeat("é", MaxNameLen), want: strings.Repeat("é", MaxNameLen)},
		{in: "", bad: true},
		{in: "   ", bad: true},
		{in: strings.Repeat("a", MaxNameLen+1), bad: true},
		{in: "tab\there", bad: true},
		{in: "nl\nhere", bad: true},
		{in: "bad\xffutf8", bad: true},
	}
	for _, tc := range tests {
		got, err := CleanName(tc.in)
		var ie *invalid.Error
		switch {
		case tc.bad && (!errors.As(err, &ie) || ie.Field != "name"):
			t.Errorf("CleanName(%q) = %q, %v; want an invalid name", tc.in, got, err)
		case !tc.bad && (err != nil || got != tc.want):
			t.Errorf("CleanName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestVersions(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		t1, v1 := f.put(t, f.owner, " invoice ", map[string]string{"index.html": "<p>one</p>", "css/site.css": "p{}"})
		if v1.Version != 1 || t1.Name != "invoice" || !ids.Valid(t1.ID) || v1.Size != int64(len("<p>one</p>p{}")) ||
			v1.Entry != "index.html" || v1.Lang != "de" || v1.HasSample {
			t.Fatalf("first upload: %+v %+v", t1, v1)
		}
		up := f.upload(t, f.owner, "invoice", map[string]string{"index.html": "<p>two</p>"})
		up.Sample = []byte(`{"n":2}`)
		f.advance(time.Minute)
		t2, v2, err := f.Put(ctx, up)
		if err != nil {
			t.Fatal(err)
		}
		if t2.ID != t1.ID || v2.Version != 2 || !v2.HasSample || len(t2.Versions) != 2 || !t2.UpdatedAt.After(t2.CreatedAt) {
			t.Fatalf("second upload: %+v %+v", t2, v2)
		}
		// Version 1 is as it was; version 2 has its own prefix.
		for key, want := range map[string]string{
			blob.TemplateFiles(t1.ID, 1) + "index.html":   "<p>one</p>",
			blob.TemplateFiles(t1.ID, 1) + "css/site.css": "p{}",
			blob.TemplateFiles(t1.ID, 2) + "index.html":   "<p>two</p>",
			blob.TemplateSample(t1.ID, 2):                 `{"n":2}`,
		} {
			if got, err := f.read(t, key); err != nil || got != want {
				t.Errorf("%s = %q, %v; want %q", key, got, err, want)
			}
		}
		if _, err := f.read(t, blob.TemplateSample(t1.ID, 1)); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("version 1 has a sample: %v", err)
		}
		got, err := f.Get(ctx, f.owner, t1.ID)
		if err != nil {
			t.Fatal(err)
		}
		byName, err := f.ByName(ctx, f.owner, "invoice")
		if err != nil || byName.ID != t1.ID {
			t.Fatalf("ByName: %v %v", byName, err)
		}
		for _, tc := range []struct{ ask, want int }{{0, 2}, {1, 1}, {2, 2}, {3, -1}, {-1, -1}} {
			v, ok := f.Version(got, tc.ask)
			if (tc.want < 0) == ok || ok && v.Version != tc.want {
				t.Errorf("Version(%d) = %d %v, want %d", tc.ask, v.Version, ok, tc.want)
			}
		}
		if v, _ := f.Version(got, 1); !slices.Equal(v.Files, []string{"css/site.css", "index.html"}) {
			t.Errorf("version 1's files %q", v.Files)
		}
		rc, err := f.Sample(ctx, got, got.Versions[1])
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if _, err := f.Sample(ctx, got, got.Versions[0]); !errors.Is(err, ErrNotFound) {
			t.Errorf("sample of a version without one: %v", err)
		}
	})
}

// Uploads of one name at once: every one gets its own number, none is lost.
func TestConcurrentUploads(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		const n = 12
		ups := make([]Upload, n)
		for i := range ups {
			ups[i] = f.upload(t, f.owner, "report", map[string]string{"index.html": fmt.Sprintf("<p>%d</p>", i)})
		}
		var wg sync.WaitGroup
		got := make([]int, n)
		tids := make([]string, n)
		for i := range ups {
			wg.Go(func() {
				tp, v, err := f.Put(context.Background(), ups[i])
				if err != nil {
					t.Error(err)
					return
				}
				got[i], tids[i] = v.Version, tp.ID
			})
		}
		wg.Wait()
		slices.Sort(got)
		for i, v := range got {
			if v != i+1 {
				t.Fatalf("versions %v, want 1..%d", got, n)
			}
		}
		tp, err := f.ByName(context.Background(), f.owner, "report")
		if err != nil {
			t.Fatal(err)
		}
		if len(tp.Versions) != n || slices.ContainsFunc(tids, func(id string) bool { return id != tp.ID }) {
			t.Fatalf("record %+v, ids %v", tp, tids)
		}
		// Each version holds what its own upload sent.
		for i := range n {
			v := tp.Versions[i]
			body, err := f.read(t, blob.TemplateFiles(tp.ID, v.Version)+"index.html")
			if err != nil || !strings.HasPrefix(body, "<p>") {
				t.Errorf("version %d: %q %v", v.Version, body, err)
			}
		}
		if n, _ := f.Count(context.Background(), f.owner); n != 1 {
			t.Errorf("count %d, want 1", n)
		}
	})
}

func TestPrivacy(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		mine, _ := f.put(t, f.owner, "invoice", map[string]string{"index.html": "mine"})
		other := "usr_" + ids.New()
		if _, err := f.Get(ctx, other, mine.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another account's Get: %v", err)
		}
		if _, err := f.ByName(ctx, other, "invoice"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another account's ByName: %v", err)
		}
		if err := f.Delete(ctx, other, mine.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("another account's Delete: %v", err)
		}
		theirs, v := f.put(t, other, "invoice", map[string]string{"index.html": "theirs"})
		if theirs.ID == mine.ID || v.Version != 1 {
			t.Fatalf("the same name in another account: %+v", theirs)
		}
		if list, total, _ := f.List(ctx, other, 1, 10); total != 1 || len(list) != 1 || list[0].ID != theirs.ID {
			t.Errorf("other's list %v %d", list, total)
		}
		for _, id := range []string{"", "not-an-id", "../../etc/passwd", ids.New()} {
			if _, err := f.Get(ctx, f.owner, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q): %v", id, err)
			}
		}
		if _, err := f.Get(ctx, f.owner, mine.ID); err != nil {
			t.Errorf("own template after the other's: %v", err)
		}
	})
}

func TestLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		put := func(name string, limit int64) error {
			up := f.upload(t, f.owner, name, map[string]string{"index.html": name})
			up.Limit = limit
			_, _, err := f.Put(ctx, up)
			return err
		}
		for _, n := range []string{"a", "b"} {
			if err := put(n, 2); err != nil {
				t.Fatal(err)
			}
		}
		var le *LimitError
		if err := put("c", 2); !errors.As(err, &le) || le.Limit != 2 {
			t.Fatalf("a third name over a limit of 2: %v", err)
		}
		if err := put("a", 2); err != nil {
			t.Fatalf("a new version over the limit: %v", err)
		}
		if err := put("x", 0); !errors.As(err, &le) {
			t.Fatalf("limit 0: %v", err)
		}
		a, _ := f.ByName(ctx, f.owner, "a")
		if err := f.Delete(ctx, f.owner, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := put("c", 2); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
		// Concurrent new names never pass the limit.
		var ok atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			up := f.upload(t, f.owner, fmt.Sprint("n", i), map[string]string{"index.html": "x"})
			up.Limit = 5
			wg.Go(func() {
				if _, _, err := f.Put(ctx, up); err == nil {
					ok.Add(1)
				} else if !errors.As(err, new(*LimitError)) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n, _ := f.Count(ctx, f.owner); ok.Load() != 3 || n != 5 {
			t.Fatalf("%d of 8 concurrent names stored, count %d; want 3 and 5", ok.Load(), n)
		}
	})
}

// An upload whose gateway died before its first version holds a slot
// until it is an hour old; then the limit gives it back.
func TestDeadUploadsFreeTheirSlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		if _, err := f.claimName(ctx, f.owner, "crashed", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := f.ByName(ctx, f.owner, "crashed"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a template without versions is found: %v", err)
		}
		if list, _, _ := f.List(ctx, f.owner, 1, 10); len(list) != 0 {
			t.Fatalf("listed: %v", list)
		}
		up := f.upload(t, f.owner, "next", map[string]string{"index.html": "x"})
		up.Limit = 1
		if _, _, err := f.Put(ctx, up); !errors.As(err, new(*LimitError)) {
			t.Fatalf("while the dead upload is young: %v", err)
		}
		f.advance(deadAfter + time.Minute)
		if _, _, err := f.Put(ctx, up); err != nil {
			t.Fatalf("after: %v", err)
		}
		// The name of the dead upload is free again.
		up = f.upload(t, f.owner, "crashed", map[string]string{"index.html": "x"})
		if _, v, err := f.Put(ctx, up); err != nil || v.Version != 1 {
			t.Fatalf("the dead upload's name: %v %v", v, err)
		}
	})
}

func TestList(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		var names []string
		for i := range 5 {
			n := fmt.Sprint("t", i)
			f.put(t, f.owner, n, map[string]string{"index.html": n})
			names = append([]string{n}, names...) // newest first
			f.advance(time.Second)
		}
		var got []string
		for page := 1; page <= 3; page++ {
			list, total, err := f.List(ctx, f.owner, page, 2)
			if err != nil || total != 5 {
				t.Fatalf("page %d: total %d, %v", page, total, err)
			}
			for _, tp := range list {
				got = append(got, tp.Name)
			}
		}
		if !slices.Equal(got, names) {
			t.Fatalf("pages %v, want %v", got, names)
		}
		if list, _, _ := f.List(ctx, f.owner, 4, 2); len(list) != 0 {
			t.Fatalf("past the end: %v", list)
		}
	})
}

func TestDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		tp, _ := f.put(t, f.owner, "invoice", map[string]string{"index.html": "one"})
		f.put(t, f.owner, "invoice", map[string]string{"index.html": "two"})
		keep, _ := f.put(t, f.owner, "other", map[string]string{"index.html": "other"})
		if err := f.Delete(ctx, f.owner, tp.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Get(ctx, f.owner, tp.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after delete: %v", err)
		}
		if _, err := f.ByName(ctx, f.owner, "invoice"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ByName after delete: %v", err)
		}
		if err := f.Delete(ctx, f.owner, tp.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("a second delete: %v", err)
		}
		// Renders already queued still read the files until the grace ends.
		if n, err := f.Sweep(ctx, 100); err != nil || n != 0 {
			t.Fatalf("sweep before the grace: %d %v", n, err)
		}
		for v := 1; v <= 2; v++ {
			if _, err := f.read(t, blob.TemplateFiles(tp.ID, v)+"index.html"); err != nil {
				t.Fatalf("version %d gone before the grace: %v", v, err)
			}
		}
		// The name is free at once: a new template, from version 1.
		again, v := f.put(t, f.owner, "invoice", map[string]string{"index.html": "new"})
		if again.ID == tp.ID || v.Version != 1 {
			t.Fatalf("the name after delete: %+v %+v", again, v)
		}
		f.advance(grace + time.Second)
		if n, err := f.Sweep(ctx, 100); err != nil || n != 1 {
			t.Fatalf("sweep after the grace: %d %v", n, err)
		}
		if _, err := f.read(t, blob.TemplateFiles(tp.ID, 1)+"index.html"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("deleted template's files after the grace: %v", err)
		}
		for _, id := range []string{keep.ID, again.ID} {
			if _, err := f.read(t, blob.TemplateFiles(id, 1)+"index.html"); err != nil {
				t.Fatalf("another template's files swept: %v", err)
			}
		}
		if list, total, _ := f.List(ctx, f.owner, 1, 10); total != 2 || len(list) != 2 {
			t.Fatalf("list after delete: %d %v", total, list)
		}
	})
}

// Past MaxVersions the oldest versions are dropped; their files go after
// the grace.
func TestMaxVersions(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		f.maxVersions = 3
		var tp *Template
		for i := 1; i <= 5; i++ {
			tp, _ = f.put(t, f.owner, "invoice", map[string]string{"index.html": fmt.Sprint(i)})
		}
		var nums []int
		for _, v := range tp.Versions {
			nums = append(nums, v.Version)
		}
		if !slices.Equal(nums, []int{3, 4, 5}) {
			t.Fatalf("versions kept %v, want [3 4 5]", nums)
		}
		got, _ := f.Get(ctx, f.owner, tp.ID)
		if _, ok := f.Version(got, 1); ok {
			t.Fatal("a dropped version is found")
		}
		if _, err := f.read(t, blob.TemplateFiles(tp.ID, 1)+"index.html"); err != nil {
			t.Fatalf("dropped version's files gone before the grace: %v", err)
		}
		f.advance(grace + time.Second)
		if n, err := f.Sweep(ctx, 100); err != nil || n != 2 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		for v := 1; v <= 5; v++ {
			_, err := f.read(t, blob.TemplateFiles(tp.ID, v)+"index.html")
			if gone := errors.Is(err, blob.ErrNotFound); gone != (v < 3) {
				t.Errorf("version %d: %v", v, err)
			}
		}
	})
}

// A record gone under its name (a delete between the two reads) does not
// keep the name: the next upload makes it anew.
func TestStaleName(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		tp, _ := f.put(t, f.owner, "invoice", map[string]string{"index.html": "one"})
		if err := f.st.Delete(ctx, recordKey(tp.ID)); err != nil {
			t.Fatal(err)
		}
		again, v := f.put(t, f.owner, "invoice", map[string]string{"index.html": "two"})
		if again.ID == tp.ID || v.Version != 1 {
			t.Fatalf("after a stale name: %+v %+v", again, v)
		}
		// A version whose record went before it was named is discarded.
		id, err := f.claimName(ctx, f.owner, "racing", math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.Delete(ctx, recordKey(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.addVersion(ctx, f.owner, id, Version{Version: 1}); !errors.Is(err, errGone) {
			t.Fatalf("addVersion on a deleted record: %v", err)
		}
	})
}

func TestRunSweeperStops(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		tp, _ := f.put(t, f.owner, "x", map[string]string{"index.html": "x"})
		if err := f.Delete(context.Background(), f.owner, tp.ID); err != nil {
			t.Fatal(err)
		}
		f.advance(grace + time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { f.RunSweeper(ctx, time.Hour, func(err error) { t.Error(err) }); close(done) }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := f.read(t, blob.TemplateFiles(tp.ID, 1)+"index.html"); errors.Is(err, blob.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweeper did not delete the files")
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-done
	})
}
