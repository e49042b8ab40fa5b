package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/docrender/docrender/client"
)

func TestParseArgsInterleaved(t *testing.T) {
	for _, tt := range []struct {
		args []string
		pos  string
		out  string
		opts string
	}{
		{[]string{"in.html", "-o", "out.pdf"}, "[in.html]", "out.pdf", ""},
		{[]string{"--option", "a=1", "in.html", "--option=b=2", "-o=x.pdf"}, "[in.html]", "x.pdf", "a=1,b=2"},
		{[]string{"a.pdf", "b.pdf", "-o", "m.pdf", "c.pdf"}, "[a.pdf b.pdf c.pdf]", "m.pdf", ""},
		{[]string{"-o", "x", "--", "-weird.html", "-o"}, "[-weird.html -o]", "x", ""},
		{[]string{"-"}, "[-]", "", ""},
	} {
		fs := newFlagSet("t")
		out := fs.String("o", "", "")
		var opts multiFlag
		fs.Var(&opts, "option", "")
		pos, err := parseArgs(fs, tt.args)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if fmt.Sprint(pos) != tt.pos || *out != tt.out || opts.String() != tt.opts {
			t.Errorf("%v: pos %v out %q opts %q", tt.args, pos, *out, opts.String())
		}
	}
	fs := newFlagSet("t")
	if _, err := parseArgs(fs, []string{"x", "--nope"}); exitCode(err) != ExitUsage {
		t.Errorf("unknown flag: %v", err)
	}
}

func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{usageErrorf("x"), ExitUsage},
		{inputErrorf("x"), ExitInput},
		{&client.Error{StatusCode: 400}, ExitInput},
		{&client.Error{StatusCode: 404}, ExitInput},
		{&client.Error{StatusCode: 422}, ExitInput},
		{&client.Error{StatusCode: 401}, ExitAuth},
		{&client.Error{StatusCode: 403}, ExitAuth},
		{&client.Error{StatusCode: 429}, ExitLimit},
		{&client.Error{StatusCode: 500}, ExitServer},
		{&client.Error{StatusCode: 503}, ExitServer},
		{fmt.Errorf("wrapped: %w", &client.Error{StatusCode: 429}), ExitLimit},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, ExitNetwork},
		{fmt.Errorf("stream: %w", io.ErrUnexpectedEOF), ExitNetwork},
		{context.DeadlineExceeded, ExitNetwork},
		{fmt.Errorf("follow: %w", context.Canceled), ExitInterrupted},
		{&url.Error{Op: "Post", URL: "http://x", Err: context.Canceled}, ExitInterrupted},
		{errors.New("open x: no such file"), ExitInput},
		// Interrupted while waiting to retry: the answer rides along.
		{fmt.Errorf("%w (gave up waiting to retry: %w)", &client.Error{StatusCode: 503}, context.Canceled), ExitInterrupted},
		{fmt.Errorf("%w (gave up waiting to retry: %w)", &client.Error{StatusCode: 429}, context.Canceled), ExitInterrupted},
		// A local file's read error, even inside the transport's *url.Error.
		{&url.Error{Op: "Post", URL: "http://x", Err: &client.UploadError{Name: "a.html", Err: errors.New("input/output error")}}, ExitInput},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	var out, errOut strings.Builder
	env := Env{Getenv: func(string) string { return "" }, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}
	if code := Run(context.Background(), []string{"help"}, env); code != ExitOK {
		t.Fatalf("help exit %d", code)
	}
	for _, want := range []string{"render", "batch", "DOCRENDER_API_KEY", "DOCRENDER_SESSION", "exit codes", "6  network"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if code := Run(context.Background(), []string{"frobnicate"}, env); code != ExitUsage || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("unknown command: exit %d, %q", code, errOut.String())
	}
	if code := Run(context.Background(), []string{"render"}, env); code != ExitUsage {
		t.Errorf("render without input: exit %d", code)
	}
	if code := Run(context.Background(), []string{"render", "https://example.com/", "-o", "y.pdf"}, env); code != ExitAuth {
		t.Errorf("render without a key: exit %d", code)
	}
}
