package render

import (
	"context"
	"fmt"

	"github.com/go-rod/rod"

	"github.com/docrender/docrender/worker/browser"
	"github.com/docrender/docrender/worker/pdfedit"
)

// Page references (DESIGN §10): an element with data-page-of="#id" shows
// the page on which the element with that ID starts, one with
// data-pages-total the page count, and toc: true writes a table of
// contents into <nav data-toc> whose entries are such references.
//
// The numbers come from the printed PDF itself: Chromium writes a named
// destination (the catalog's /Dests, named by the ID, on the target's page)
// for each element an internal link points to. Every referenced ID gets a
// link in a container that is not displayed, the page is printed, the
// numbers are read from the destinations and written into the page, and it
// is printed again, until they stay the same or after maxPasses prints (a
// number that pushes a heading to the next page is seen by the next print).

// refsSelector is what a page with page references has: a page without
// any is printed once, as before.
const refsSelector = `[data-page-of], [data-pages-total], nav[data-toc]`

// maxPasses is the most prints a page's references get.
const maxPasses = 3

// prepareRefsJS writes the table of contents (when toc) and the hidden links
// to every referenced ID; false when the page has no references at all.
// Entries are the headings h1–h3 outside the nav, nested by level, each a
// link and a data-page-of span; a heading without an ID gets one.
const prepareRefsJS = `(toc) => {
	const nav = toc ? document.querySelector('nav[data-toc]') : null;
	if (nav) {
		let n = 0;
		const fresh = () => { let id; do { id = 'docrender-toc-' + (++n); } while (document.getElementById(id)); return id; };
		const root = document.createElement('ol');
		root.className = 'docrender-toc';
		const stack = [{ level: 0, item: null, sub: null }];
		for (const h of document.querySelectorAll('h1, h2, h3')) {
			if (nav.contains(h) || h.closest('[data-toc-skip]')) continue;
			const text = h.textContent.replace(/\s+/g, ' ').trim();
			if (!text) continue;
			if (!h.id) h.id = fresh();
			const level = Number(h.tagName[1]);
			while (stack.length > 1 && stack[stack.length - 1].level >= level) stack.pop();
			const parent = stack[stack.length - 1];
			let list = root;
			if (parent.item) {
				// A deeper level goes into the entry above's own list.
				if (!parent.sub) { parent.sub = document.createElement('ol'); parent.item.appendChild(parent.sub); }
				list = parent.sub;
			}
			const li = document.createElement('li');
			const entry = document.createElement('span');
			entry.className = 'docrender-toc-entry';
			const a = document.createElement('a');
			a.href = '#' + h.id;
			a.textContent = text;
			const page = document.createElement('span');
			page.className = 'docrender-toc-page';
			page.setAttribute('data-page-of', '#' + h.id);
			entry.append(a, ' ', page);
			li.appendChild(entry);
			list.appendChild(li);
			stack.push({ level, item: li, sub: null });
		}
		const style = document.createElement('style');
		style.textContent = ':where(nav[data-toc] ol.docrender-toc, nav[data-toc] ol.docrender-toc ol){list-style:none;margin:0;padding:0}' +
			':where(nav[data-toc] ol.docrender-toc ol){padding-left:1.5em}' +
			':where(nav[data-toc] .docrender-toc-entry){display:flex;gap:.5em}' +
			':where(nav[data-toc] .docrender-toc-entry > a){flex:1;color:inherit;text-decoration:none}';
		document.head.appendChild(style);
		nav.appendChild(root);
	}
	const refs = document.querySelectorAll('[data-page-of]');
	if (!refs.length && !nav && !document.querySelector('[data-pages-total]')) return false;
	const ids = new Set();
	for (const el of refs) {
		const id = el.getAttribute('data-page-of').trim().replace(/^#/, '');
		if (id) ids.add(id);
	}
	const hidden = document.createElement('div');
	hidden.setAttribute('aria-hidden', 'true');
	hidden.setAttribute('data-docrender-refs', '');
	hidden.style.setProperty('display', 'none', 'important');
	for (const id of ids) {
		const a = document.createElement('a');
		a.href = '#' + encodeURIComponent(id);
		a.tabIndex = -1;
		hidden.appendChild(a);
	}
	(document.body || document.documentElement).appendChild(hidden);
	return true;
}`

// fillRefsJS writes the pages of the destinations (an ID not found: "?")
// and the page count into the page; true when any number changed.
const fillRefsJS = `(dests, total) => {
	let changed = false;
	const set = (el, text) => { if (el.textContent !== text) { el.textContent = text; changed = true; } };
	for (const el of document.querySelectorAll('[data-page-of]')) {
		const id = el.getAttribute('data-page-of').trim().replace(/^#/, '');
		set(el, dests[id] ? String(dests[id]) : '?');
	}
	for (const el of document.querySelectorAll('[data-pages-total]')) set(el, String(total));
	return changed;
}`

// prepareRefs readies the page for printWithRefs; false when it has no
// page references.
func prepareRefs(p *rod.Page, toc bool) (bool, error) {
	var any bool
	if err := browser.Evaluate(p, prepareRefsJS, &any, toc); err != nil {
		return false, fmt.Errorf("%w: page references: %v", ErrPage, err)
	}
	return any, nil
}

// printWithRefs prints a page that prepareRefs readied until its numbers
// are stable, at most maxPasses times, and says how many times. The
// passes print the whole document (the numbers are the whole document's);
// req's page ranges, if any, are printed after them.
func printWithRefs(ctx context.Context, p *rod.Page, req printParams, printed func()) (pdf []byte, passes int, err error) {
	whole := req
	whole.PageRanges = ""
	for passes = 1; ; passes++ {
		if pdf, err = printPDF(ctx, p, whole, printed); err != nil {
			return nil, passes, err
		}
		dests, total, err := pdfedit.DestPages(ctx, pdf)
		if err != nil {
			return nil, passes, fmt.Errorf("%w: page references: %v", ErrPage, err)
		}
		if passes == maxPasses {
			break
		}
		var changed bool
		if err := browser.Evaluate(p, fillRefsJS, &changed, dests, total); err != nil {
			return nil, passes, fmt.Errorf("%w: page references: %v", ErrPage, err)
		}
		if !changed {
			break
		}
	}
	if req.PageRanges != "" {
		pdf, err = printPDF(ctx, p, req, nil)
	}
	return pdf, passes, err
}
