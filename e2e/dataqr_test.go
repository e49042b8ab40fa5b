package e2e

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/qr"
)

// pdfCodes rasterises every page of pdf with pdftoppm at dpi and returns the
// sorted texts of all QR codes zbarimg finds on them.
func pdfCodes(t testing.TB, pdf []byte, dpi int) []string {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "doc.pdf")
	if err := os.WriteFile(in, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("pdftoppm", "-png", "-r", fmt.Sprint(dpi), in, filepath.Join(dir, "page")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v %s", err, out)
	}
	pages, _ := filepath.Glob(filepath.Join(dir, "page*.png"))
	if len(pages) == 0 {
		t.Fatal("pdftoppm wrote no pages")
	}
	var codes []string
	for _, p := range pages {
		codes = append(codes, zbarFile(t, p)...)
	}
	sort.Strings(codes)
	return codes
}

var imageListRe = regexp.MustCompile(`(?m)^\s*\d+\s+\d+\s+\w+\s+(\d+)\s+(\d+)\s+\S+\s+\d+\s+\d+\s+\S+\s+\S+\s+\d+\s+\d+\s+(\d+)\s+(\d+)\s`)

// embeddedImage is one image of pdfimages -list: its bitmap and the size it
// is shown at, in CSS pixels (96 to the inch).
type embeddedImage struct {
	W, H           int // bitmap pixels
	ShownW, ShownH int // CSS pixels, rounded
}

func embeddedImages(t testing.TB, pdf []byte) []embeddedImage {
	t.Helper()
	var imgs []embeddedImage
	for _, m := range imageListRe.FindAllStringSubmatch(run(t, "pdfimages", "-list", writeTemp(t, pdf, ".pdf")), -1) {
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		im := embeddedImage{W: n(m[1]), H: n(m[2])}
		if xppi, yppi := n(m[3]), n(m[4]); xppi > 0 && yppi > 0 {
			im.ShownW = int(math.Round(float64(im.W) * 96 / float64(xppi)))
			im.ShownH = int(math.Round(float64(im.H) * 96 / float64(yppi)))
		}
		imgs = append(imgs, im)
	}
	return imgs
}

// TestDataQRCodesDecode: <img data-qr> in the main document and in
// same-origin frames becomes a QR code of exactly data-qr-size pixels with
// the data-qr-* options, readable by zbar from the printed page.
func TestDataQRCodesDecode(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	index := `<!doctype html><style>div{padding:30px;display:inline-block}</style>
<div><img data-qr="https://example.com/default" alt="default"></div>
<div><img data-qr="LEVEL H MARGIN 4" data-qr-size="300" data-qr-ecc="h" data-qr-margin="4"></div>
<div style="background:#fffde7"><img data-qr="colours" data-qr-dark="#1a237e" data-qr-light="#fffde7" data-qr-size="180"></div>
<div><img data-qr="replaces src and srcset" src="missing.png" srcset="missing.png 2x" loading="lazy" data-qr-size="160"></div>
<div><iframe src="frame.html" style="border:0;width:320px;height:320px"></iframe></div>
<div><iframe srcdoc="<body style='margin:30px'><img data-qr='IN SRCDOC FRAME' data-qr-size='200'>" style="border:0;width:320px;height:320px"></iframe></div>`
	frame := `<!doctype html><body style="margin:30px"><img data-qr="IN FRAME FILE" data-qr-size="200" data-qr-ecc="Q">`
	resp := c.generate([]file{htmlFile("index.html", index), htmlFile("frame.html", frame)}, nil)
	mustStatus(t, resp, http.StatusOK)
	pdf := readAll(t, resp)

	want := []string{"IN FRAME FILE", "IN SRCDOC FRAME", "LEVEL H MARGIN 4", "colours", "https://example.com/default", "replaces src and srcset"}
	sort.Strings(want)
	if got := pdfCodes(t, pdf, 150); !slices.Equal(got, want) {
		t.Errorf("decoded %q, want %q", got, want)
	}
	// Each code shows at data-qr-size CSS pixels; its bitmap has whole
	// pixels per module at about twice that (see render.printBitmap).
	imgs := embeddedImages(t, pdf)
	for _, size := range []int{200, 300, 180, 160} {
		found := slices.ContainsFunc(imgs, func(im embeddedImage) bool {
			return near(float64(im.ShownW), float64(size), 2) && near(float64(im.ShownH), float64(size), 2) && im.W >= size
		})
		if !found {
			t.Errorf("no image shown at %d×%d CSS px (images: %+v)", size, size, imgs)
		}
	}
}

// ticketSheet is n tickets, four to a row, each with a QR code of its number.
func ticketSheet(n int, img func(i int) string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><style>
body{margin:0;font:14px 'Liberation Sans'}
.t{display:inline-block;box-sizing:border-box;width:25%;height:190px;padding:16px;border:1px dashed #999;text-align:center;break-inside:avoid}
img{display:block;margin:0 auto 6px}</style>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `<div class="t">%s<b>TICKET %04d</b></div>`, img(i), i)
	}
	return b.String()
}

func ticketData(i int) string { return fmt.Sprintf("https://tickets.example/t/%04d", i) }

// TestDataQRTicketSheet: 100 codes in one document render, print and decode;
// the time the hook adds is measured against the same sheet with the same
// PNGs inlined as data URLs by the client.
func TestDataQRTicketSheet(t *testing.T) {
	// A service of its own with a generous render timeout: the shared one's
	// 8 s is too tight for a 5-page sheet of 100 images when the whole test
	// suite shares two cores; the time is measured and logged, not bounded.
	svc := startService(t, func(cfg *configT) { cfg.RenderTimeout = 45 * time.Second })
	c := newClient(t, svc)
	const n = 100
	withHook := ticketSheet(n, func(i int) string {
		return fmt.Sprintf(`<img data-qr="%s" data-qr-size="120">`, ticketData(i))
	})
	inlined := ticketSheet(n, func(i int) string {
		o := qr.NewOptions(ticketData(i))
		o.Size = 120
		u, err := qr.DataURL(o)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`<img src="%s">`, u)
	})
	// Warm the pool's tabs so that neither render pays a first-use cost.
	c.generatePDF(simpleHTML, nil)

	start := time.Now()
	base := c.generatePDF(inlined, nil)
	baseTime := time.Since(start)
	start = time.Now()
	pdf := c.generatePDF(withHook, nil)
	hookTime := time.Since(start)
	t.Logf("100-code sheet: %v with data-qr, %v with the same PNGs inlined (hook cost ≈ %v); %d pages",
		hookTime.Round(time.Millisecond), baseTime.Round(time.Millisecond), (hookTime - baseTime).Round(time.Millisecond), info(t, pdf).Pages)
	if pb, pq := info(t, base).Pages, info(t, pdf).Pages; pb != pq {
		t.Errorf("%d pages with data-qr, %d inlined: the codes must lay out like plain images", pq, pb)
	}

	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, ticketData(i))
	}
	sort.Strings(want)
	got := pdfCodes(t, pdf, 150)
	if !slices.Equal(got, want) {
		missing := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return slices.Contains(got, s) })
		t.Errorf("decoded %d of %d codes; missing %q; extra/duplicates in %d", len(got), n, missing, len(got))
	}
}

// TestDataQRBadAttributes: an invalid data-qr attribute fails the job as
// the client's mistake: 400 naming the attribute and the image, no
// conversion counted.
func TestDataQRBadAttributes(t *testing.T) {
	svc := sharedService(t)
	c := newClient(t, svc)
	tests := []struct {
		name, img, attr string
	}{
		{"size not a number", `<img data-qr="A" data-qr-size="big">`, "data-qr-size"},
		{"size too small", `<img data-qr="A" data-qr-size="20">`, "data-qr-size"},
		{"margin 11", `<img data-qr="A" data-qr-margin="11">`, "data-qr-margin"},
		{"unknown level", `<img data-qr="A" data-qr-ecc="Z">`, "data-qr-ecc"},
		{"bad dark colour", `<img data-qr="A" data-qr-dark="blue">`, "data-qr-dark"},
		{"bad light colour", `<img data-qr="A" data-qr-light="#12">`, "data-qr-light"},
		{"empty data", `<img data-qr="">`, "data-qr"},
		{"data too long", `<img data-qr="` + strings.Repeat("z", 1300) + `" data-qr-ecc="H">`, "data-qr"},
	}
	before := c.usage()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A good code first: the message must point at the second image.
			html := `<img data-qr="fine">` + tc.img
			e := expectError(t, c.generate([]file{htmlFile("index.html", html)}, nil), http.StatusBadRequest, apierr.BadRequest)
			if !strings.Contains(e.Message, tc.attr+":") || !strings.Contains(e.Message, "image 2 of 2") {
				t.Errorf("message %q: want it to name %s and image 2 of 2", e.Message, tc.attr)
			}
		})
	}
	if got := c.usage(); got != before {
		t.Errorf("conversions %d → %d: refused renders must not count", before, got)
	}
}
