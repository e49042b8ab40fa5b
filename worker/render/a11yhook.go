package render

import (
	"context"
	"fmt"

	"github.com/go-rod/rod"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/browser"
)

// imagesWithoutAltJS finds the images of the page that have no alternative
// text (DESIGN §8, PDF/UA: Chromium writes a Figure's /Alt only from the
// image's accessible name), in document order, in the main document and in
// same-origin frames, and returns the first max of them and how many there
// are:
//
//   - img without an alt attribute (alt="" is a decorative image, and so
//     is role=presentation or none), nor aria-label, aria-labelledby or title;
//   - input type=image, the same;
//   - any other element with role=img (an <svg role=img>, say) without an
//     accessible name: aria-label, aria-labelledby naming an element with
//     text, title, or for SVG a <title> child with text.
//
// An element that is not rendered (no box) or hidden from assistive
// technology (aria-hidden=true) is not in the PDF's structure: it is left
// out. An image is named by its URL (data: URLs cut after their media
// type), anything else, and an img without a src, by a short description
// that starts with "<": "<div id=\"chart\" role=\"img\">".
const imagesWithoutAltJS = `(max) => {
	const list = [];
	let total = 0;
	const has = s => typeof s === 'string' && s.trim() !== '';
	const named = el => {
		if (has(el.getAttribute('aria-label')) || has(el.getAttribute('title'))) return true;
		const ids = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean);
		return ids.some(id => { const l = el.ownerDocument.getElementById(id); return l !== null && has(l.textContent); });
	};
	const svgTitled = el => el.namespaceURI === 'http://www.w3.org/2000/svg' &&
		Array.from(el.children).some(c => c.localName === 'title' && has(c.textContent));
	const role = el => (el.getAttribute('role') || '').trim().toLowerCase().split(/\s+/)[0];
	const missing = el => {
		if (el.getClientRects().length === 0 || el.closest('[aria-hidden="true" i]') !== null) return false;
		const html = el.namespaceURI === 'http://www.w3.org/1999/xhtml';
		if (html && el.localName === 'img') {
			const r = role(el);
			return !el.hasAttribute('alt') && r !== 'presentation' && r !== 'none' && !named(el);
		}
		if (html && el.localName === 'input') return !el.hasAttribute('alt') && !named(el);
		return !named(el) && !svgTitled(el);
	};
	const describe = el => {
		let s = '<' + el.localName;
		for (const a of ['id', 'class', 'role', 'data-qr']) {
			const v = el.getAttribute(a);
			if (has(v)) s += ' ' + a + '="' + (v.length > 60 ? v.slice(0, 60) + '…' : v) + '"';
		}
		return s + '>';
	};
	const name = el => {
		const src = el.namespaceURI === 'http://www.w3.org/1999/xhtml' &&
			(el.localName === 'img' || el.localName === 'input') ? (el.currentSrc || el.src || '') : '';
		if (src === '') return describe(el);
		if (src.startsWith('data:')) {
			const comma = src.indexOf(',');
			return src.slice(0, comma >= 0 && comma < 64 ? comma + 1 : 64) + '…';
		}
		return src;
	};
	const walk = (doc, depth) => {
		for (const el of doc.querySelectorAll('img, input[type=image i], [role~=img i]')) {
			if (!missing(el)) continue;
			total++;
			if (list.length < max) list.push(name(el));
		}
		if (depth >= 4) return;
		for (const f of doc.querySelectorAll('iframe, frame')) {
			let d = null;
			try { d = f.contentDocument; } catch (e) {}
			if (d) walk(d, depth + 1);
		}
	};
	walk(document, 0);
	return { list, total };
}`

// Accessibility is the PageHook of DESIGN §8 (PDF/UA): it lists the images
// without alternative text in the render report (images_without_alt, the
// first 100, and their total), for failOnAccessibilityErrors to fail the
// render on. One CDP round trip, on pages that have an image at all.
var Accessibility = PageHook{Selector: "img, input[type=image i], [role~=img i]", Run: imagesWithoutAlt}

func imagesWithoutAlt(ctx context.Context, page *rod.Page, rep *jobspb.Report) error {
	var found struct {
		List  []string `json:"list"`
		Total int32    `json:"total"`
	}
	if err := browser.Evaluate(page, imagesWithoutAltJS, &found, maxReportEntries); err != nil {
		return fmt.Errorf("%w: accessibility: %v", ErrPage, err)
	}
	rep.ImagesWithoutAlt = found.List[:min(len(found.List), maxReportEntries)]
	rep.ImagesWithoutAltTotal = max(found.Total, int32(len(rep.ImagesWithoutAlt)))
	return nil
}
