package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"

	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/qr"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/egress"
)

// The tests share one egress proxy and one-tab Chromium pool, started on
// first use; each test builds its Renderer with its own hooks.
var (
	poolOnce  sync.Once
	testPool  *browser.Pool
	testProxy *egress.Proxy
	poolErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testPool != nil {
		testPool.Close()
		testProxy.Close()
	}
	os.Exit(code)
}

// testRenderer returns a Renderer on the shared pool whose hooks run in the
// given order.
func testRenderer(t testing.TB, hooks ...PageHook) *Renderer {
	t.Helper()
	bin, err := browser.FindChromium("")
	if err != nil {
		t.Skipf("no Chromium: %v", err)
	}
	poolOnce.Do(func() {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if testProxy, poolErr = egress.Start(netguard.New(nil), log); poolErr != nil {
			return
		}
		testPool, poolErr = browser.Start(context.Background(), browser.Config{Bin: bin, Proxy: testProxy.Addr(), HomeURL: egress.HomeURL, Tabs: 1, Log: log,
			NewLane: func() (browser.Lane, error) { return testProxy.NewLane() }})
		if poolErr != nil {
			testProxy.Close()
		}
	})
	if poolErr != nil {
		t.Fatal(poolErr)
	}
	return &Renderer{Pool: testPool, Hooks: hooks}
}

var a4 = &jobspb.Page{WidthIn: 8.27, HeightIn: 11.69, MarginTopIn: 0.4, MarginRightIn: 0.4, MarginBottomIn: 0.4, MarginLeftIn: 0.4}

func tickets(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><style>.t{display:inline-block;width:24%;height:190px;text-align:center}</style>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<div class="t"><img data-qr="https://tickets.example/t/%04d" data-qr-size="120"><br>TICKET %04d</div>`, i, i)
	}
	return b.String()
}

// TestQRCodesHookPhases renders a 100-code sheet and reports where the
// hook's time goes: collecting (one CDP call), drawing (Go), setting and
// decoding (one CDP call). The images must all be loaded when it returns.
func TestQRCodesHookPhases(t *testing.T) {
	var phases struct{ collect, draw, set time.Duration }
	var complete int
	measured := func(ctx context.Context, page *rod.Page, _ *jobspb.Report) error {
		t0 := time.Now()
		res, err := page.Eval(collectQRJS)
		if err != nil {
			return err
		}
		var found [][]*string
		if err := res.Value.Unmarshal(&found); err != nil {
			return err
		}
		t1 := time.Now()
		urls, sizes, err := qrDataURLs(ctx, found)
		if err != nil {
			return err
		}
		t2 := time.Now()
		if _, err := page.Eval(setQRJS, urls, sizes); err != nil {
			return err
		}
		t3 := time.Now()
		phases.collect, phases.draw, phases.set = t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
		done, err := page.Eval(`() => [...document.images].filter(i => i.complete && i.naturalWidth > 0 && i.src.startsWith('data:image/png')).length`)
		if err != nil {
			return err
		}
		complete = done.Value.Int()
		return nil
	}
	r := testRenderer(t, PageHook{Selector: "img[data-qr]", Run: measured})
	b := egress.Bundle{"index.html": []byte(tickets(100))}
	if _, err := r.Render(context.Background(), b, &jobspb.RenderJob{Entry: "index.html", Page: a4}, 30*time.Second); err != nil { // warm-up
		t.Fatal(err)
	}
	start := time.Now()
	out, err := r.Render(context.Background(), b, &jobspb.RenderJob{Entry: "index.html", Page: a4}, 30*time.Second)
	pdf := out.PDF
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("100 codes: render %v; hook: collect %v, draw %v, set+decode %v",
		time.Since(start).Round(time.Millisecond), phases.collect.Round(time.Microsecond),
		phases.draw.Round(time.Microsecond), phases.set.Round(time.Microsecond))
	if complete != 100 {
		t.Errorf("%d of 100 images loaded when the hook returned", complete)
	}
	if !strings.HasPrefix(string(pdf), "%PDF-") {
		t.Fatal("not a PDF")
	}
}

// TestQRCodesHookErrors: bad attributes are *InputError naming the image
// and attribute; a page without codes is left alone.
func TestQRCodesHookErrors(t *testing.T) {
	r := testRenderer(t, QRCodes)
	tests := []struct {
		name, html, want string
	}{
		{"no codes", `<p>plain</p>`, ""},
		{"bad size", `<img data-qr="a"><img data-qr="b" data-qr-size="x">`, `data-qr image 2 of 2 (data-qr="b"): Invalid value for data-qr-size`},
		{"long data shortened in the message", `<img data-qr="` + strings.Repeat("é", 1200) + `">`, `data-qr image 1 of 1 (data-qr="` + strings.Repeat("é", 20) + `...")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Render(context.Background(), egress.Bundle{"index.html": []byte(tc.html)}, &jobspb.RenderJob{Entry: "index.html", Page: a4}, 20*time.Second)
			var ie *InputError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.want != "" && !errors.As(err, &ie):
				t.Fatalf("err %v, want *InputError", err)
			case tc.want != "" && !strings.Contains(ie.Message, tc.want):
				t.Fatalf("message %q lacks %q", ie.Message, tc.want)
			}
		})
	}
}

// TestPrintBitmap: whole pixels per module, about printScale × size.
func TestPrintBitmap(t *testing.T) {
	for _, size := range []int{32, 57, 120, 200, 1000, 2048} {
		o := qr.NewOptions("https://tickets.example/t/0001")
		o.Size = size
		if size < 40 {
			o.Margin = 0
		}
		n, err := o.Modules()
		if err != nil {
			t.Fatal(err)
		}
		b, err := printBitmap(o)
		if err != nil {
			t.Fatal(err)
		}
		if b.Size%n != 0 || b.Size > qr.MaxSize || b.Size < min(printScale*size, qr.MaxSize-n) {
			t.Errorf("size %d (%d modules): bitmap %d px", size, n, b.Size)
		}
	}
}
