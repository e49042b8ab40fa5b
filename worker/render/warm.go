package render

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docrender/docrender/worker/egress"
)

// A stored template's page kept warm (DESIGN §9, issue 23): the documents
// of one template version differ in their data, not in their stylesheets,
// fonts and images. A tab that printed one keeps its written document
// (browser.Tab.KeepWarm, under a key of the account, the version and its
// entry), and the next document of that key to take the tab is filled
// into it in place (browser.Tab.Fill): its head stays (stylesheets parsed,
// fonts and images decoded), everything after it is replaced by the new
// document's, parsed in the page. That is only done where the result is
// the document a fresh write makes, measured by the tests: the page has
// no scripts (the static path), its head is the same but for its <title>
// text (set from the new document), and nothing after the head can change
// the head or the root element. Anything else is written anew, as every
// page without scripts is.

// warmPage is a kept document's state (browser.Warm.Data).
type warmPage struct {
	// site is the job's that wrote the document: its addresses stay valid
	// for the jobs that fill it (egress.Lane.ServeAgain).
	site egress.Site
	// head is the document's headKey.
	head string
}

// headKey is the part of a page that a fill keeps: its source up to the
// <body> start tag, the text of its <title> elements left out. ok is false
// when the page cannot be filled into another of the same head: it has no
// <body> tag, or an <html> tag after it (its attributes would go to the
// kept root element), or autofocus (applied once per document).
func headKey(page string) (key string, ok bool) {
	z := html.NewTokenizer(strings.NewReader(page))
	var head bytes.Buffer
	inBody, inTitle := false, false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return head.String(), inBody && z.Err() == io.EOF
		}
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			name, hasAttr := z.TagName()
			tag := atom.Lookup(name)
			if tag == atom.Html && inBody {
				return "", false
			}
			if tag == atom.Body && !inBody {
				inBody = true
			}
			for hasAttr {
				var k []byte
				k, _, hasAttr = z.TagAttr()
				if strings.EqualFold(string(k), "autofocus") {
					return "", false
				}
			}
			inTitle = !inBody && tag == atom.Title
		} else if tt == html.EndTagToken {
			inTitle = false
		}
		if inBody {
			continue
		}
		if tt == html.TextToken && inTitle {
			head.WriteString("\x00title\x00")
			continue
		}
		head.Write(z.Raw())
	}
}

// fillJS replaces a kept document's content with html's: the text of its
// <title> elements, and every node after its head (in the root element and
// after it) with the new document's, adopted. Then loadedJS.
const fillJS = `async (html, selectors) => {
	const d = new DOMParser().parseFromString(html, 'text/html');
	const titles = document.head.querySelectorAll('title'), next = d.head.querySelectorAll('title');
	if (titles.length !== next.length) {
		throw new Error('docrender: the kept head differs');
	}
	titles.forEach((t, i) => { t.textContent = next[i].textContent; });
	const root = document.documentElement;
	while (root.lastChild && root.lastChild !== document.head) root.lastChild.remove();
	while (root.nextSibling) root.nextSibling.remove();
	for (let n = d.head.nextSibling; n; ) {
		const after = n.nextSibling;
		root.appendChild(document.adoptNode(n));
		n = after;
	}
	for (let n = d.documentElement.nextSibling; n; ) {
		const after = n.nextSibling;
		document.appendChild(document.adoptNode(n));
		n = after;
	}
	return await (` + loadedJS + `)(selectors);
}`
