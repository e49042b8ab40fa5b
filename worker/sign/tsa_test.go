package sign

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
)

func TestTSAStamp(t *testing.T) {
	p := testPKI(t)
	srv := tsaServer(t, p)
	data := []byte("a signature value")
	token, err := (&TSA{URL: srv.URL}).Stamp(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := timestamp.Parse(token)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if !bytes.Equal(ts.HashedMessage, sum[:]) || time.Since(ts.Time) > time.Minute || len(ts.Certificates) == 0 {
		t.Errorf("token: %+v", ts)
	}
}

// editQuery rewrites a time-stamp query before the TSA answers it.
func editQuery(t *testing.T, f func(*timestamp.Request)) func([]byte) []byte {
	return func(q []byte) []byte {
		req, err := timestamp.ParseRequest(q)
		if err != nil {
			t.Error(err)
			return q
		}
		f(req)
		out, err := req.Marshal()
		if err != nil {
			t.Error(err)
			return q
		}
		return out
	}
}

func TestTSAFailures(t *testing.T) {
	p := testPKI(t)
	answer := func(status int, body []byte) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/timestamp-reply")
			w.WriteHeader(status)
			w.Write(body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	rejection, err := timestamp.CreateErrorResponse(timestamp.Rejection, timestamp.BadAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, tc := range []struct {
		name string
		url  string
		want string
	}{
		{"slow", slow.URL, "deadline exceeded"},
		{"garbage", answer(200, []byte("this is no time-stamp response")).URL, ""},
		{"over 1 MiB", answer(200, make([]byte, maxTSAResp+10)).URL, "larger than 1 MiB"},
		{"HTTP 500", answer(500, nil).URL, "HTTP 500"},
		{"rejection", answer(200, rejection).URL, "rejected"},
		{"wrong nonce", tsaServerWith(t, p, editQuery(t, func(r *timestamp.Request) { r.Nonce = new(big.Int).Add(r.Nonce, big.NewInt(1)) })).URL, "nonce"},
		{"no nonce", tsaServerWith(t, p, editQuery(t, func(r *timestamp.Request) { r.Nonce = nil })).URL, "nonce"},
		{"other data", tsaServerWith(t, p, editQuery(t, func(r *timestamp.Request) { r.HashedMessage = make([]byte, 32) })).URL, "other data"},
		{"no certificate", tsaServerWith(t, p, editQuery(t, func(r *timestamp.Request) { r.Certificates = false })).URL, "no certificate"},
		{"unreachable", closed.URL, ""},
		{"no URL", "", "no time-stamp authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := (&TSA{URL: tc.url}).Stamp(ctx, []byte("x"))
			if !errors.Is(err, ErrTSA) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrTSA with %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "time-stamp authority unavailable") {
				t.Errorf("error %q", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
