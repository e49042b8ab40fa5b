package worker

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/tmpl"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/egress"
	"github.com/docrender/docrender/worker/render"
)

// parsedFactor is what a parsed template holds per byte of its source,
// counted against the cache's bound: an estimate of raymond's tree, not a measurement.
const parsedFactor = 4

// templateCacheBytes bounds the stored templates a worker keeps loaded and
// parsed between jobs (DESIGN §9): their files' bytes, together.
const templateCacheBytes = 64 << 20

// templateCache keeps stored templates' files and parsed entry file
// between jobs, least recently used first out. A template version never
// changes, so its blob prefix names it for good; the key also holds the
// account, so no two accounts ever share an entry.
type templateCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *loadedTemplate, most recent first
	byKey map[string]*list.Element
}

// loadedTemplate is one template version, ready to fill.
type loadedTemplate struct {
	key    string
	bundle egress.Bundle
	entry  string
	// tpls are the files filled with the data: the entry and the header
	// and footer templates (DESIGN §6's header.html, footer.html).
	tpls map[string]*tmpl.Template
	size int64
}

// filledFiles are the bundle's files a template's data fills.
func filledFiles(entry string) []string { return []string{entry, "header.html", "footer.html"} }

func newTemplateCache(max int64) *templateCache {
	return &templateCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *templateCache) get(key string) *loadedTemplate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*loadedTemplate)
	}
	return nil
}

// put keeps t unless it alone is larger than the cache.
func (c *templateCache) put(t *loadedTemplate) {
	if t.size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[t.key]; ok {
		return
	}
	c.byKey[t.key] = c.order.PushFront(t)
	c.size += t.size
	for c.size > c.max {
		last := c.order.Back()
		old := last.Value.(*loadedTemplate)
		c.order.Remove(last)
		delete(c.byKey, old.key)
		c.size -= old.size
	}
}

// errTemplateGone is a template deleted (and swept) before its job ran.
var errTemplateGone = errors.New("the template is gone")

// templateFailure is a template that could not be filled: its result.
type templateFailure struct{ res *jobspb.Result }

func (e *templateFailure) Error() string { return "worker: " + e.res.ErrorMessage }

// fillTemplate returns the bundle of rj's stored template with its entry
// file filled with the job's data (DESIGN §9). A template or data the
// client must fix is a *templateFailure carrying the result to answer with.
func (w *Worker) fillTemplate(ctx context.Context, job *jobspb.Job, rj *jobspb.RenderJob) (egress.Bundle, error) {
	fill := rj.GetTemplate()
	t, err := w.loadTemplate(ctx, job.AccountId, rj)
	if err != nil {
		return nil, err
	}
	raw := fill.GetDataJson()
	if key := fill.GetDataKey(); key != "" {
		if raw, err = blob.ReadAll(ctx, w.blobs, key, tmpl.MaxDataBytes); err != nil {
			if errors.Is(err, blob.ErrNotFound) {
				// The request gave up and cleaned up: nothing to do.
				return nil, &templateFailure{failure(jobspb.ErrorKind_ERROR_KIND_INTERNAL, "The document's data is gone.")}
			}
			return nil, fmt.Errorf("worker: template data: %w", err)
		}
	}
	data, err := tmpl.DecodeData(raw)
	if err != nil {
		var bad *tmpl.DataError
		if errors.As(err, &bad) {
			return nil, &templateFailure{failure(jobspb.ErrorKind_ERROR_KIND_BAD_INPUT, sentence("Invalid data: "+bad.Error()))}
		}
		return nil, err
	}
	b := maps.Clone(t.bundle)
	for name, tpl := range t.tpls {
		html, err := tpl.Render(data)
		if err != nil {
			var bad *tmpl.RenderError
			if !errors.As(err, &bad) {
				return nil, err
			}
			where, problem := fmt.Sprintf("line %d", bad.Line), bad.Problem
			if name != t.entry {
				where, problem = name+" "+where, name+": "+problem
			}
			res := failure(jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED, sentence(fmt.Sprintf("The template could not be filled with the data: %s, %s: %s", where, dataPath(bad.Path), bad.Problem)))
			res.Report = &jobspb.Report{TemplateErrors: []*jobspb.TemplateError{{Line: int32(bad.Line), Path: bad.Path, Message: problem}}}
			return nil, &templateFailure{res}
		}
		b[name] = []byte(html)
	}
	return b, nil
}

func dataPath(p string) string {
	if p == "" {
		return "the data"
	}
	return p
}

// loadTemplate is rj's template version from the cache, or loaded and
// parsed (then kept).
func (w *Worker) loadTemplate(ctx context.Context, account string, rj *jobspb.RenderJob) (*loadedTemplate, error) {
	key := account + "\x00" + rj.BundlePrefix
	if t := w.templates.get(key); t != nil && t.entry == rj.Entry {
		return t, nil
	}
	b, err := render.LoadBundle(ctx, w.blobs, rj.BundlePrefix, rj.Files)
	if err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			return nil, errTemplateGone
		}
		return nil, err
	}
	t := &loadedTemplate{key: key, bundle: b, entry: rj.Entry, tpls: map[string]*tmpl.Template{}}
	for _, name := range filledFiles(rj.Entry) {
		src, ok := b[name]
		if !ok {
			continue
		}
		tpl, err := tmpl.Parse(string(src))
		if err != nil {
			// Checked at upload: a template that parsed then and not now is
			// a change of rules; the client must upload it again.
			var bad *tmpl.SyntaxError
			if errors.As(err, &bad) {
				res := failure(jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED, sentence(fmt.Sprintf("The template cannot be used: %s line %d: %s", name, bad.Line, bad.Problem)))
				res.Report = &jobspb.Report{TemplateErrors: []*jobspb.TemplateError{{Line: int32(bad.Line), Message: bad.Problem}}}
				return nil, &templateFailure{res}
			}
			return nil, err
		}
		t.tpls[name] = tpl
	}
	for _, data := range b {
		t.size += int64(len(data))
	}
	// A parsed template holds several times its source (raymond's tree).
	for name := range t.tpls {
		t.size += parsedFactor * int64(len(b[name]))
	}
	w.templates.put(t)
	return t, nil
}
