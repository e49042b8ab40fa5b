package worker

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/markdown"
)

// MarkdownTemplate is the file of a Markdown job's bundle that, when sent,
// holds the page the document goes into at its {{content}}.
const MarkdownTemplate = "template.html"

// markdownPage turns the Markdown entry of rj's bundle b into the HTML page
// it prints as (POST /pdf/markdown, DESIGN §11), inside the bundle's
// template.html when it has one. The page takes the entry's name with
// .html for .md, in the same folder, so the links of either reach the
// same assets; it replaces an uploaded file of that name. It returns the
// bundle with the page and rj with the page as its entry, or the failure
// the client must hear about (a template without {{content}}).
func markdownPage(b egress.Bundle, rj *jobspb.RenderJob) (egress.Bundle, *jobspb.RenderJob, *jobspb.Result) {
	page, err := markdown.Page(b[rj.GetEntry()], b[MarkdownTemplate])
	switch {
	case errors.Is(err, markdown.ErrNoPlaceholder):
		return nil, nil, optionFailure(MarkdownTemplate, "has no "+markdown.Placeholder+", where the document goes")
	case errors.Is(err, markdown.ErrTooLarge):
		return nil, nil, filesFailure(fmt.Sprintf("%s is larger than %d MiB, the most Markdown this service reads.", rj.GetEntry(), markdown.MaxBytes>>20))
	case err != nil:
		return nil, nil, failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The Markdown could not be converted.")
	}
	name := strings.TrimSuffix(rj.GetEntry(), path.Ext(rj.GetEntry())) + ".html"
	b[name] = page
	rj = proto.CloneOf(rj)
	rj.Entry, rj.Markdown = name, false
	return b, rj, nil
}
