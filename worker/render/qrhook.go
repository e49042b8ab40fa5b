package render

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unicode/utf8"

	"github.com/go-rod/rod"

	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/qr"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
)

// InputError is a page the client must fix (a bad data-qr attribute, say).
// A PageHook returns it to fail the job as BAD_INPUT (a 400) with Message,
// instead of as a render failure that would be retried.
type InputError struct {
	Message string
}

func (e *InputError) Error() string { return "render: bad input: " + e.Message }

// MaxQRCodes bounds the data-qr images of one document: each costs about a
// millisecond of CPU, and a page asking for more is more likely a mistake
// than a ticket sheet.
const MaxQRCodes = 5000

// qrAttrs are the data-qr-* suffixes qr.FromAttrs reads, in the order the
// collecting script returns their values after data-qr itself.
var qrAttrs = [...]string{"size", "margin", "ecc", "dark", "light"}

// collectQRJS finds every <img data-qr> of the page, in document order, in
// the main document and in same-origin frames (a bundle's own iframes), keeps
// the elements for setQRJS under a page-global symbol, and returns each one's
// data-qr and data-qr-* values (null when absent).
const collectQRJS = `() => {
	const els = [];
	const walk = (doc, depth) => {
		els.push(...doc.querySelectorAll('img[data-qr]'));
		if (depth >= 4) return;
		for (const f of doc.querySelectorAll('iframe, frame')) {
			let d = null;
			try { d = f.contentDocument; } catch (e) {}
			if (d) walk(d, depth + 1);
		}
	};
	walk(document, 0);
	window[Symbol.for('docrender.qr')] = els;
	const names = ['size', 'margin', 'ecc', 'dark', 'light'];
	return els.map(el => [el.getAttribute('data-qr'), ...names.map(n => el.getAttribute('data-qr-' + n))]);
}`

// setQRJS sets each kept image's src to its data URL and resolves once all
// of them are decoded, so that the print that follows shows them. srcset
// would override src, and a lazy image off screen might never load: both
// are cleared. A decode failure is left to the print (a broken image), it
// cannot happen with our own PNGs.
//
// The PNG has more pixels than data-qr-size (see printBitmap), so an image
// the page does not size itself gets width and height = data-qr-size: it
// lays out exactly as a size×size PNG would, and page CSS still wins over
// these presentational attributes.
const setQRJS = `(urls, sizes) => {
	const els = window[Symbol.for('docrender.qr')] || [];
	delete window[Symbol.for('docrender.qr')];
	return Promise.all(els.map((el, i) => {
		el.removeAttribute('srcset');
		el.loading = 'eager';
		if (!el.hasAttribute('width') && !el.hasAttribute('height')) {
			el.width = sizes[i];
			el.height = sizes[i];
		}
		el.src = urls[i];
		return el.decode().catch(() => {});
	})).then(() => els.length);
}`

// QRCodes is the PageHook of DESIGN §4.15: every <img data-qr="TEXT"> gets
// src = a PNG data URL of a QR code of TEXT, drawn in Go by pkg/qr with the
// image's data-qr-size, -margin, -ecc, -dark and -light (the options,
// defaults and limits of POST /pdf/qrcode). It costs two CDP round trips
// whatever the number of codes: one to collect the attributes, one to set
// every src and await the decodes. An invalid attribute fails the job with
// an *InputError naming the attribute and the image.
var QRCodes = PageHook{Selector: "img[data-qr]", Run: qrCodes}

func qrCodes(ctx context.Context, page *rod.Page, _ *jobspb.Report) error {
	var found [][]*string
	if err := browser.Evaluate(page, collectQRJS, &found); err != nil {
		return fmt.Errorf("%w: data-qr: collect: %v", ErrPage, err)
	}
	if len(found) == 0 {
		return nil
	}
	if len(found) > MaxQRCodes {
		return &InputError{Message: fmt.Sprintf("Too many data-qr images: %d, at most %d per document.", len(found), MaxQRCodes)}
	}
	urls, sizes, err := qrDataURLs(ctx, found)
	if err != nil {
		return err
	}
	if err := browser.Evaluate(page, setQRJS, nil, urls, sizes); err != nil {
		return fmt.Errorf("%w: data-qr: set images: %v", ErrPage, err)
	}
	return nil
}

// qrDataURLs turns the collected attribute rows into options, validating
// all of them first (the first bad image, in document order, is reported),
// then draws each distinct code once, on every core. sizes are the
// data-qr-size of each image, its size on the page in CSS pixels.
func qrDataURLs(ctx context.Context, found [][]*string) (urls []string, sizes []int, err error) {
	opts := make([]qr.Options, len(found))
	sizes = make([]int, len(found))
	for i, row := range found {
		o, err := qrOptions(row)
		if err != nil {
			return nil, nil, &InputError{Message: qrErrorMessage(i, len(found), row, err)}
		}
		sizes[i] = o.Size
		if opts[i], err = printBitmap(o); err != nil {
			return nil, nil, fmt.Errorf("render: data-qr: %w", err)
		}
	}
	index := make(map[qr.Options]int, len(opts)) // distinct options → slot in unique
	var unique []qr.Options
	slot := make([]int, len(opts))
	for i, o := range opts {
		j, ok := index[o]
		if !ok {
			j = len(unique)
			index[o] = j
			unique = append(unique, o)
		}
		slot[i] = j
	}
	drawn, err := drawAll(ctx, unique)
	if err != nil {
		return nil, nil, err
	}
	urls = make([]string, len(opts))
	for i, j := range slot {
		urls[i] = drawn[j]
	}
	return urls, sizes, nil
}

// printScale is how many bitmap pixels a data-qr code gets per CSS pixel
// of its size on the page (about 200 dpi in print).
const printScale = 2

// printBitmap returns o drawn for print: a PNG of a whole number of pixels
// per module, about printScale times o.Size; it still shows at o.Size CSS
// pixels (setQRJS). Chromium embeds an image at its own resolution and
// every reader rescales it, to the printer's dots or a viewer's pixels. A
// size×size PNG has modules of 3 and 4 pixels in a 120 px code of 31
// modules, and rescaling such coarse, uneven modules garbles some codes:
// zbar read 85 to 100 of a 100-code ticket sheet from poppler rasters at 72
// to 600 dpi. At twice the pixels, modules even, it read 98 to 100 (100 at
// 100 to 300 dpi); even modules alone at 1× did not help, three or four
// times the pixels did not help further and made the PDF larger.
func printBitmap(o qr.Options) (qr.Options, error) {
	n, err := o.Modules()
	if err != nil {
		return o, err
	}
	perModule := max(1, (printScale*o.Size+n-1)/n)
	if perModule*n > qr.MaxSize {
		perModule = max(1, qr.MaxSize/n)
	}
	o.Size = perModule * n
	return o, nil
}

// qrOptions reads one row of collectQRJS: data-qr, then the qrAttrs values.
func qrOptions(row []*string) (qr.Options, error) {
	str := func(i int) string {
		if i < len(row) && row[i] != nil {
			return *row[i]
		}
		return ""
	}
	attrs := make(map[string]string, len(qrAttrs))
	for k, name := range qrAttrs {
		attrs[name] = str(k + 1)
	}
	return qr.FromAttrs(str(0), attrs)
}

// qrErrorMessage says which image is wrong and why, e.g.
// `data-qr image 3 of 100 (data-qr="TICKET-3"): Invalid value for data-qr-size: "big" is not an integer`.
func qrErrorMessage(i, n int, row []*string, err error) string {
	data := ""
	if len(row) > 0 && row[0] != nil {
		data = *row[0]
	}
	const maxShown = 40
	if len(data) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		data = data[:cut] + "..."
	}
	msg := err.Error()
	var bad *invalid.Error
	if errors.As(err, &bad) {
		msg = bad.Error()
	}
	return fmt.Sprintf("data-qr image %d of %d (data-qr=%q): %s", i+1, n, data, msg)
}

// drawAll draws the codes concurrently, one goroutine per core: a 100-code
// ticket sheet is ~100 ms of CPU on one core.
func drawAll(ctx context.Context, opts []qr.Options) ([]string, error) {
	out := make([]string, len(opts))
	errs := make([]error, len(opts))
	workers := min(runtime.GOMAXPROCS(0), len(opts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = qr.DataURL(opts[i])
			}
		})
	}
	var cancelled error
	for i := range opts {
		if cancelled = ctx.Err(); cancelled != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if cancelled != nil {
		return nil, cancelled
	}
	for _, err := range errs {
		if err != nil {
			// Options were validated: a failure here is ours, not the page's.
			return nil, fmt.Errorf("render: data-qr: %w", err)
		}
	}
	return out, nil
}
