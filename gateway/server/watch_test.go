package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/batch"
)

// Progress streams and waiting batch requests share one watcher per
// batch (watch.go); an account holds a bounded number of streams
// (accountlimit.go).

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// sseStream is a progress stream opened by a test: for a 200 its events
// are read in the background.
type sseStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	// events receives the stream's events; one the test does not take in
	// time is dropped (count still counts it).
	events chan sseEvent
	count  atomic.Int64
	// ended is closed when the server ended the stream.
	ended chan struct{}
}

type sseEvent struct {
	name string
	p    batch.Progress
}

// openStream opens GET /pdf/progress/:id/stream with key ("" for the test
// user's).
func (g *testGateway) openStream(key, id string) *sseStream {
	g.t.Helper()
	if key == "" {
		key = g.key
	}
	ctx, cancel := context.WithCancel(context.Background())
	hr, err := http.NewRequestWithContext(ctx, "GET", g.url+"/pdf/progress/"+id+"/stream", nil)
	if err != nil {
		g.t.Fatal(err)
	}
	hr.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		cancel()
		g.t.Fatal(err)
	}
	s := &sseStream{resp: resp, cancel: cancel, events: make(chan sseEvent, 64), ended: make(chan struct{})}
	g.t.Cleanup(s.close)
	if resp.StatusCode == http.StatusOK {
		go s.read()
	} else {
		close(s.ended)
	}
	return s
}

func (s *sseStream) read() {
	defer close(s.ended)
	sc := bufio.NewScanner(s.resp.Body)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.p)
		case line == "":
			s.count.Add(1)
			select {
			case s.events <- cur:
			default:
			}
			cur = sseEvent{}
		}
	}
}

// next is the stream's next event.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case e := <-s.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return sseEvent{}
}

// refusal reads a stream that was not opened as a plain reply.
func (s *sseStream) refusal(t *testing.T) reply {
	t.Helper()
	defer s.resp.Body.Close()
	a := reply{status: s.resp.StatusCode, header: s.resp.Header}
	a.body, _ = io.ReadAll(s.resp.Body)
	_ = json.Unmarshal(a.body, &a.json)
	return a
}

// close leaves as a client does.
func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// startBatch starts a stream batch of n documents for key ("" for the
// test user); the fake queue never runs them, so it stays processing.
func (g *testGateway) startBatch(key string, n int) string {
	g.t.Helper()
	docs := make([]map[string]string, n)
	for i := range docs {
		docs[i] = map[string]string{"fileName": fmt.Sprintf("d%d", i), "htmlContent": "<p>x"}
	}
	a := g.do(req{method: "POST", path: "/pdf/generate-batch", key: key, body: map[string]any{"documents": docs, "stream": true}})
	a.check(g.t, expect{status: http.StatusOK})
	id, _ := a.json["batchId"].(string)
	return id
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countReads makes the gateway's watchers count their reads of progress.
func countReads(g *testGateway) *atomic.Int64 {
	var n atomic.Int64
	h := g.srv.batches.watch
	read := h.read
	h.read = func(ctx context.Context, rec *batch.Record) (batch.Progress, error) {
		n.Add(1)
		return read(ctx, rec)
	}
	return &n
}

// Many streams on one batch cost one read of its progress per interval,
// not one each, and every stream still gets an event per interval.
func TestStreamsShareOneRead(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_MAX_STREAMS_PER_ACCOUNT": "100"})
	reads := countReads(g)
	id := g.startBatch("", 2)
	const n = 50
	streams := make([]*sseStream, n)
	for i := range streams {
		streams[i] = g.openStream("", id)
		if e := streams[i].next(t); e.name != "progress" || e.p.Status != batch.Processing || e.p.Total != 2 {
			t.Fatalf("stream %d: first event %+v", i, e)
		}
	}
	if got := g.srv.ActiveProgressStreams(); got != n {
		t.Fatalf("open streams %d, want %d", got, n)
	}
	before, events := reads.Load(), make([]int64, n)
	for i, s := range streams {
		events[i] = s.count.Load()
	}
	start := time.Now()
	time.Sleep(2 * time.Second)
	took := time.Since(start)
	got := reads.Load() - before
	intervals := float64(took) / float64(sseInterval)
	t.Logf("%d streams: %d progress reads in %s (%.1f intervals): %.2f a interval", n, got, took.Round(time.Millisecond), intervals, float64(got)/intervals)
	if float64(got) >= 3*intervals {
		t.Fatalf("%d reads for %.1f intervals: want one an interval, shared by the %d streams", got, intervals, n)
	}
	for i, s := range streams {
		if e := s.count.Load() - events[i]; e < 3 {
			t.Fatalf("stream %d: %d events in %s, want one every %s", i, e, took, sseInterval)
		}
	}
	for _, s := range streams {
		s.close()
	}
	waitFor(t, "streams end with their clients", func() bool {
		return g.srv.ActiveProgressStreams() == 0 && g.srv.batches.watch.watching() == 0
	})
}

// An account holds at most DOCRENDER_MAX_STREAMS_PER_ACCOUNT streams: the
// next is refused before it starts, other accounts are not touched, and a
// client leaving frees its slot.
func TestStreamCapPerAccount(t *testing.T) {
	g := newGateway(t, map[string]string{"DOCRENDER_MAX_STREAMS_PER_ACCOUNT": "2"})
	id := g.startBatch("", 1)
	first, second := g.openStream("", id), g.openStream("", id)
	for _, s := range []*sseStream{first, second} {
		if s.resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the cap: %d", s.resp.StatusCode)
		}
		s.next(t)
	}
	over := g.openStream("", id).refusal(t)
	checkRateLimited(t, over)
	if ct := over.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("refused stream answered %q, want the API's JSON error", ct)
	}
	// An unknown batch is answered without a slot.
	if s := g.openStream("", "AAAAAAAAAAAAAAAAAAAAAA"); s.resp.StatusCode != http.StatusOK || s.next(t).p.Status != batch.NotFound {
		t.Fatalf("unknown batch at the cap: %d", s.resp.StatusCode)
	}

	_, otherKey := g.signUp("other@example.com")
	other := g.openStream(otherKey, g.startBatch(otherKey, 1))
	if other.resp.StatusCode != http.StatusOK {
		t.Fatalf("another account's stream: %d", other.resp.StatusCode)
	}
	other.next(t)

	first.close()
	var again *sseStream
	waitFor(t, "a closed stream frees its slot", func() bool {
		again = g.openStream("", id)
		if again.resp.StatusCode == http.StatusOK {
			return true
		}
		checkRateLimited(t, again.refusal(t))
		return false
	})
	again.next(t)
	checkRateLimited(t, g.openStream("", id).refusal(t))
}

// A lease is renewed while its stream is open, and expires once renewal
// stops (the stream of a gateway that died).
func TestStreamLeaseRenewal(t *testing.T) {
	g := newGateway(t, nil)
	ctx := t.Context()
	const index, lease, ttl = "streams:test", "lease", 150 * time.Millisecond
	live := func() int64 {
		n, err := g.srv.State.IndexCount(ctx, index, unixMilli(time.Now()), math.Inf(1))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := g.srv.State.IndexAdd(ctx, index, lease, unixMilli(time.Now().Add(ttl))); err != nil {
		t.Fatal(err)
	}
	renewCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); g.srv.renewLease(renewCtx, index, lease, ttl/5, ttl) }()
	time.Sleep(3 * ttl)
	if live() != 1 {
		t.Fatal("a renewed lease expired")
	}
	stop()
	<-done
	time.Sleep(2 * ttl)
	if live() != 0 {
		t.Fatal("a lease outlived its renewal")
	}
}

// The stream's events come from the watcher: a failing store ends every
// stream with the event that says to poll, and the server closing ends
// every stream.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name string
		// read, when set, replaces the store's progress; end ends the streams.
		read      progressReader
		end       func(g *testGateway)
		wantEvent string
	}{
		{"the store keeps failing", func(context.Context, *batch.Record) (batch.Progress, error) {
			return batch.Progress{}, errors.New("store down")
		}, nil, eventError},
		{"the server closes", nil, func(g *testGateway) { g.srv.StopStreams() }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			if tc.read != nil {
				g.srv.batches.watch = newProgressHub(tc.read, 10*time.Millisecond, quiet)
			}
			id := g.startBatch("", 1)
			streams := []*sseStream{g.openStream("", id), g.openStream("", id)}
			if tc.end != nil {
				for _, s := range streams {
					s.next(t)
				}
				tc.end(g)
			}
			for i, s := range streams {
				select {
				case <-s.ended:
				case <-time.After(5 * time.Second):
					t.Fatalf("stream %d still open", i)
				}
				var last sseEvent
				for len(s.events) > 0 {
					last = <-s.events
				}
				if tc.wantEvent != "" && (last.name != tc.wantEvent || !strings.Contains(last.p.Message, "Poll "+g.srv.Config.BaseURL+"/pdf/progress/"+id)) {
					t.Fatalf("stream %d: last event %+v, want %s telling to poll", i, last, tc.wantEvent)
				}
			}
			waitFor(t, "streams and watcher end", func() bool {
				return g.srv.ActiveProgressStreams() == 0 && g.srv.batches.watch.watching() == 0
			})
		})
	}
}

// progressAfter reads as processing until its nth call, then as ends.
func progressAfter(n int64, ends batch.Progress, reads *atomic.Int64) progressReader {
	return func(context.Context, *batch.Record) (batch.Progress, error) {
		if i := reads.Add(1); i < n {
			return batch.Progress{Total: 3, Current: int(i) % 3, Status: batch.Processing}, nil
		}
		return ends, nil
	}
}

// A subscriber that takes nothing holds up neither the watcher nor the
// others: it keeps only the latest reading.
func TestSlowSubscriberDelaysNoOne(t *testing.T) {
	var reads atomic.Int64
	h := newProgressHub(func(context.Context, *batch.Record) (batch.Progress, error) {
		return batch.Progress{Total: 1000, Current: int(reads.Add(1)), Status: batch.Processing}, nil
	}, 5*time.Millisecond, quiet)
	rec := &batch.Record{ID: "b", Total: 1000}
	// Closed at the end, not deferred: were the watcher stuck on slow,
	// closing would wait for it and hide the failure in a test timeout.
	slow, fast := h.subscribe(rec), h.subscribe(rec)
	last := 0
	for range 50 {
		select {
		case u := <-fast.C:
			if u.Progress.Current <= last {
				t.Fatalf("reading %d after %d", u.Progress.Current, last)
			}
			last = u.Progress.Current
		case <-time.After(time.Second):
			t.Fatalf("the fast subscriber waited a second behind the slow one (last reading %d)", last)
		}
	}
	if u := <-slow.C; u.Progress.Current < last {
		t.Fatalf("the slow subscriber holds reading %d, older than %d", u.Progress.Current, last)
	}
	slow.close()
	fast.close()
}

// Every subscriber gets the terminal reading, which stops the watcher; the
// last subscriber leaving stops it too.
func TestWatcherLifetime(t *testing.T) {
	done := batch.Progress{Total: 3, Current: 3, Status: batch.Completed, Message: "done"}
	tests := []struct {
		name  string
		ends  int64 // the read that turns terminal; 0: never
		leave bool  // the subscribers leave instead
	}{
		{"the batch ends", 4, false},
		{"everyone leaves", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ends := tc.ends
			if ends == 0 {
				ends = math.MaxInt64
			}
			var reads atomic.Int64
			h := newProgressHub(progressAfter(ends, done, &reads), 5*time.Millisecond, quiet)
			rec := &batch.Record{ID: "b", Total: 3}
			subs := []*progressSub{h.subscribe(rec), h.subscribe(rec), h.subscribe(rec)}
			if h.watching() != 1 {
				t.Fatalf("%d watchers for one batch", h.watching())
			}
			for i, s := range subs {
				u := <-s.C
				if tc.leave {
					s.close()
					continue
				}
				for !u.last() {
					u = <-s.C
				}
				if u.Progress != done {
					t.Fatalf("subscriber %d: last %+v, want %+v", i, u.Progress, done)
				}
				s.close()
			}
			waitFor(t, "the watcher stops", func() bool { return h.watching() == 0 })
			n := reads.Load()
			time.Sleep(20 * h.interval)
			if reads.Load() != n {
				t.Fatalf("reads went on after the watcher stopped: %d then %d", n, reads.Load())
			}
		})
	}
}

// waitDone returns the batch's terminal progress, waiting through store
// failures (it has nobody to tell to poll), or its context's error.
func TestWaitDone(t *testing.T) {
	failed := batch.Progress{Total: 3, Status: batch.Error, Message: "failed"}
	storeDown := errors.New("store down")
	tests := []struct {
		name    string
		read    func(i int64) (batch.Progress, error)
		timeout time.Duration
		want    batch.Progress
		wantErr error
	}{
		{"ends", func(i int64) (batch.Progress, error) {
			if i < 5 {
				return batch.Progress{Total: 3, Status: batch.Processing}, nil
			}
			return failed, nil
		}, 5 * time.Second, failed, nil},
		{"ends after the store failed for a while", func(i int64) (batch.Progress, error) {
			if i < 3*sseMaxFailures {
				return batch.Progress{}, storeDown
			}
			return failed, nil
		}, 5 * time.Second, failed, nil},
		{"does not end in time", func(int64) (batch.Progress, error) {
			return batch.Progress{Total: 3, Status: batch.Processing}, nil
		}, 100 * time.Millisecond, batch.Progress{}, context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGateway(t, nil)
			var reads atomic.Int64
			g.srv.batches.watch = newProgressHub(func(context.Context, *batch.Record) (batch.Progress, error) {
				return tc.read(reads.Add(1))
			}, 2*time.Millisecond, quiet)
			ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
			defer cancel()
			p, err := g.srv.batches.waitDone(ctx, &batch.Record{ID: "b", Total: 3})
			if !errors.Is(err, tc.wantErr) || p != tc.want {
				t.Fatalf("waitDone: %+v, %v; want %+v, %v", p, err, tc.want, tc.wantErr)
			}
			if g.srv.batches.watch.watching() != 0 {
				t.Fatal("the watcher outlived the wait")
			}
		})
	}
}

// waitDone and the streams of a batch share its watcher, over the real
// store: a batch that fails ends both.
func TestWaitDoneSharesTheStreamsWatcher(t *testing.T) {
	g := newGateway(t, nil)
	reads := countReads(g)
	id := g.startBatch("", 2)
	s := g.openStream("", id)
	s.next(t)
	rec, err := g.srv.batches.tracker.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		p   batch.Progress
		err error
	}
	waited := make(chan outcome, 1)
	go func() {
		p, err := g.srv.batches.waitDone(t.Context(), rec)
		waited <- outcome{p, err}
	}()
	waitFor(t, "waitDone joins the stream's watcher", func() bool {
		h := g.srv.batches.watch
		h.mu.Lock()
		defer h.mu.Unlock()
		w := h.watchers[id]
		return w != nil && len(w.subs) == 2
	})
	before := reads.Load()
	if _, err := g.srv.batches.tracker.Fail(t.Context(), rec, "The fake worker says no."); err != nil {
		t.Fatal(err)
	}
	var r outcome
	select {
	case r = <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("waitDone did not return after the batch failed")
	}
	if r.err != nil || r.p.Status != batch.Error || r.p.Message != "The fake worker says no." {
		t.Fatalf("waitDone: %+v, %v", r.p, r.err)
	}
	<-s.ended
	var last sseEvent
	for len(s.events) > 0 {
		last = <-s.events
	}
	if last.name != eventError || last.p != r.p {
		t.Fatalf("stream's last event %+v, want error %+v", last, r.p)
	}
	if n := reads.Load() - before; n > 3 {
		t.Fatalf("%d reads between the failure and its news, want one shared read", n)
	}
}
