package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSSEParsing(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []sseEvent
		retry  time.Duration
	}{
		{"named event", "event: progress\ndata: {\"a\":1}\n\n",
			[]sseEvent{{Name: "progress", Data: `{"a":1}`}}, 0},
		{"multi-line data joined by newlines", "data: one\ndata: two\ndata:three\n\n",
			[]sseEvent{{Name: "message", Data: "one\ntwo\nthree"}}, 0},
		{"comments and keep-alives skipped", ": hello\n\n:ping\nevent: x\n: mid\ndata: d\n\n",
			[]sseEvent{{Name: "x", Data: "d"}}, 0},
		{"CRLF and CR line ends", "event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r",
			[]sseEvent{{Name: "a", Data: "1"}, {Name: "b", Data: "2"}}, 0},
		{"only one leading space is dropped", "data:  two spaces\n\n",
			[]sseEvent{{Name: "message", Data: " two spaces"}}, 0},
		{"event without data is not dispatched and its name resets", "event: lost\n\ndata: kept\n\n",
			[]sseEvent{{Name: "message", Data: "kept"}}, 0},
		{"id is sticky", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
			[]sseEvent{{Name: "message", Data: "a", ID: "7"}, {Name: "message", Data: "b", ID: "7"}, {Name: "message", Data: "c", ID: ""}}, 0},
		{"retry sets the reconnection time, bad values ignored", "retry: 2500\nretry: soon\ndata: x\n\n",
			[]sseEvent{{Name: "message", Data: "x"}}, 2500 * time.Millisecond},
		{"byte order mark at the start", "\ufeffdata: x\n\n",
			[]sseEvent{{Name: "message", Data: "x"}}, 0},
		{"an event cut off at the end is dropped", "data: whole\n\ndata: cut",
			[]sseEvent{{Name: "message", Data: "whole"}}, 0},
		{"a field without colon", "data\n\n",
			[]sseEvent{{Name: "message", Data: ""}}, 0},
		{"unknown fields ignored", "foo: bar\ndata: x\n\n",
			[]sseEvent{{Name: "message", Data: "x"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tt.stream))
			var got []sseEvent
			for {
				ev, err := r.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
			if r.retry != tt.retry {
				t.Errorf("retry %v, want %v", r.retry, tt.retry)
			}
		})
	}
}

func TestSSEChunkedDelivery(t *testing.T) {
	// An event split across reads, byte by byte, parses the same.
	pr, pw := io.Pipe()
	go func() {
		for _, b := range []byte("event: progress\r\ndata: {\"total\":2,\r\ndata: \"current\":1}\r\n\r\n") {
			pw.Write([]byte{b})
		}
		pw.Close()
	}()
	ev, err := newSSEReader(pr).next()
	if err != nil || ev.Name != "progress" || ev.Data != "{\"total\":2,\n\"current\":1}" {
		t.Fatalf("got %+v, %v", ev, err)
	}
}

// progressServer serves a progress stream per connection from script:
// each connection writes its next body (the last repeats); a poll of the
// progress (not /stream) gets the next record of polls.
type progressServer struct {
	mu      sync.Mutex
	script  []string
	n       int
	lastIDs []string
	paths   []string
	keys    []string
	ctype   string
	polls   []string
	polled  int
}

func (s *progressServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if !strings.HasSuffix(r.URL.Path, "/stream") {
		if len(s.polls) == 0 || r.URL.Path != "/pdf/progress/b1" {
			s.mu.Unlock()
			http.NotFound(w, r)
			return
		}
		rec := s.polls[min(s.polled, len(s.polls)-1)]
		s.polled++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(rec))
		return
	}
	body := s.script[min(s.n, len(s.script)-1)]
	s.n++
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	s.paths = append(s.paths, r.URL.Path)
	s.keys = append(s.keys, r.Header.Get("X-API-Key"))
	s.mu.Unlock()
	ct := s.ctype
	if ct == "" {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(200)
	for _, chunk := range strings.SplitAfter(body, "\n\n") {
		w.Write([]byte(chunk))
		w.(http.Flusher).Flush()
	}
}

func ev(name string, cur, total int, status, msg string) string {
	return fmt.Sprintf("event: %s\ndata: %s\n\n", name, rec(cur, total, status, msg))
}

// rec is a progress record as JSON.
func rec(cur, total int, status, msg string) string {
	return fmt.Sprintf("{\"total\":%d,\"current\":%d,\"status\":%q,\"message\":%q}", total, cur, status, msg)
}

// unavailable is the error event the gateway sends when it cannot read a
// batch's progress for a while (gateway/server/sse.go, pushProgress).
var unavailable = ev("error", 0, 3, "error", "Progress is unavailable right now. Poll http://x/pdf/progress/b1 to follow the batch.")

func TestFollowBatch(t *testing.T) {
	done := ev("complete", 3, 3, "completed", "Download URL: http://x/pdf/download/b1")
	tests := []struct {
		name      string
		script    []string
		ctype     string
		wantSeen  []int
		wantConns int
		wantErr   string // code of the *Error, or "eof" for a stream that never finishes
		lastIDs   []string
		polls     []string // the records a poll of the progress answers, in turn
		wantPolls int
	}{
		{"to completion", []string{": hi\n\n" + ev("progress", 1, 3, "processing", "Generated 1/3 PDFs") + ev("progress", 2, 3, "processing", "") + done},
			"", []int{1, 2, 3}, 1, "", nil, nil, 0},
		{"reconnects after the stream drops, with Last-Event-ID", []string{
			"retry: 10\nid: e1\n" + ev("progress", 1, 3, "processing", ""), // ends without a last event
			ev("progress", 2, 3, "processing", "") + done},
			"", []int{1, 2, 3}, 2, "", []string{"", "e1"}, nil, 0},
		{"unknown batch", []string{ev("error", 0, 0, "not_found", "Batch not found.")}, "", []int{0}, 1, CodeNotFound, nil, nil, 0},
		{"failed batch, as its progress confirms", []string{ev("progress", 1, 3, "processing", "") + ev("error", 1, 3, "error", "render failed")},
			"", []int{1, 1}, 1, CodeInternal, nil, []string{rec(1, 3, "error", "render failed")}, 1},
		{"progress unavailable for a while: the batch is polled to its end", []string{ev("progress", 1, 3, "processing", "") + unavailable},
			"", []int{1, 1, 2, 3}, 1, "", nil, []string{rec(1, 3, "processing", ""), rec(2, 3, "processing", ""),
				rec(3, 3, "completed", "Download URL: http://x/pdf/download/b1")}, 3},
		{"progress unavailable, then the batch failed", []string{unavailable},
			"", []int{2, 2}, 1, CodeInternal, nil, []string{rec(2, 3, "processing", ""), rec(2, 3, "error", "render failed")}, 2},
		{"gives up on a stream that never says anything", []string{"retry: 1\n: nothing\n\n"}, "", nil, sseMaxReconnects + 1, "eof", nil, nil, 0},
		{"not an event stream", []string{"{}"}, "application/json", nil, 1, "UNEXPECTED_CONTENT_TYPE", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &progressServer{script: tt.script, ctype: tt.ctype, polls: tt.polls}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c := newTestClient(t, srv.URL)
			c.sleep = func(context.Context, time.Duration) error { return nil }
			var seen []int
			final, err := c.FollowBatch(context.Background(), "b1", func(p Progress) { seen = append(seen, p.Current) })
			if fmt.Sprint(seen) != fmt.Sprint(tt.wantSeen) {
				t.Errorf("saw %v, want %v", seen, tt.wantSeen)
			}
			if s.n != tt.wantConns || s.polled != tt.wantPolls {
				t.Errorf("%d connections and %d polls, want %d and %d", s.n, s.polled, tt.wantConns, tt.wantPolls)
			}
			switch tt.wantErr {
			case "":
				if err != nil || final == nil || final.Status != StatusCompleted {
					t.Fatalf("final %+v, err %v", final, err)
				}
				bc, err := final.Completion()
				if err != nil || bc.DownloadURL != "http://x/pdf/download/b1" {
					t.Errorf("completion %+v %v", bc, err)
				}
			case "eof":
				if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("err %v, want a stream that ended", err)
				}
			default:
				var e *Error
				if !errors.As(err, &e) || e.Code != tt.wantErr {
					t.Errorf("err %v, want code %s", err, tt.wantErr)
				}
			}
			if tt.lastIDs != nil && fmt.Sprint(s.lastIDs) != fmt.Sprint(tt.lastIDs) {
				t.Errorf("Last-Event-ID sent %q, want %q", s.lastIDs, tt.lastIDs)
			}
			if s.paths[0] != "/pdf/progress/b1/stream" || s.keys[0] != "drk_test" {
				t.Errorf("asked %s with key %q", s.paths[0], s.keys[0])
			}
		})
	}
}

func TestProgressEventsChannel(t *testing.T) {
	s := &progressServer{script: []string{ev("progress", 1, 2, "processing", "") +
		ev("complete", 2, 2, "completed", `{"downloadUrl":"http://x/api/hosted-pdfs/z","zipId":"z","expiresAt":"2030-01-01T00:00:00.000Z","documentsGenerated":2}`)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	var got []ProgressEvent
	for e := range c.ProgressEvents(context.Background(), "b1") {
		got = append(got, e)
	}
	if len(got) != 2 || got[0].Done || got[0].Progress.Current != 1 || !got[1].Done || got[1].Err != nil || got[1].Progress.Status != StatusCompleted {
		t.Fatalf("events %+v", got)
	}
	bc, err := got[1].Progress.Completion()
	if err != nil || bc.ZipID != "z" || bc.DocumentsGenerated != 2 || bc.ExpiresAt.Year() != 2030 {
		t.Errorf("hosted completion %+v %v", bc, err)
	}
}

func TestFollowBatchEndsWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(ev("progress", 0, 1, "processing", "")))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	last, err := c.FollowBatch(ctx, "b1", nil)
	if !errors.Is(err, context.DeadlineExceeded) || last == nil || last.Status != StatusProcessing {
		t.Fatalf("last %+v, err %v", last, err)
	}
}

func TestSSEBareCRDispatchesAtOnce(t *testing.T) {
	// An event ended by bare CRs is dispatched without waiting for the
	// next byte, which may be a long time coming (or never).
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("data: a\r\r"))
	r := newSSEReader(pr)
	got := make(chan sseEvent, 2)
	go func() {
		for {
			ev, err := r.next()
			if err != nil {
				return
			}
			got <- ev
		}
	}()
	select {
	case ev := <-got:
		if ev.Data != "a" {
			t.Fatalf("got %+v", ev)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("an event ended by CR waited for the next byte")
	}
	// A LF after the CR still belongs to its CRLF: no empty line, so the
	// next event is not cut short.
	go pw.Write([]byte("\ndata: b\r\n\r\n"))
	select {
	case ev := <-got:
		if ev.Data != "b" {
			t.Fatalf("got %+v", ev)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("second event not dispatched")
	}
}
