package worker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/proto/jobspb"
)

// templateWorker is a worker with only what filling templates needs.
func templateWorker(t *testing.T, files map[string]string) (*Worker, *jobspb.RenderJob) {
	t.Helper()
	store, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prefix := blob.TemplateFiles("tpl1", 1)
	rj := &jobspb.RenderJob{BundlePrefix: prefix, Entry: "index.html", Template: &jobspb.TemplateFill{TemplateId: "tpl1", Version: 1}}
	for name, body := range files {
		if err := store.Put(context.Background(), prefix+name, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		rj.Files = append(rj.Files, name)
	}
	return &Worker{blobs: store, templates: newTemplateCache(1 << 20)}, rj
}

// A stored template is filled with each job's data; the template is loaded
// and parsed once per account and kept; another account's job loads its
// own copy.
func TestFillTemplate(t *testing.T) {
	w, rj := templateWorker(t, map[string]string{
		"index.html": `<html lang="de"><body><h1>{{customer.name}}</h1>{{#each items}}<p>{{@index}} {{name}}</p>{{/each}}<a href="{{link}}">x</a></body></html>`,
		"style.css":  "h1{color:red}",
	})
	ctx := context.Background()
	job := &jobspb.Job{AccountId: "acct-a"}
	for i, data := range []string{
		`{"customer":{"name":"<b>Ada</b>"},"items":[{"name":"one"},{"name":"two"}],"link":"javascript:alert(1)"}`,
		`{"customer":{"name":"Bob"},"items":[]}`,
	} {
		rj.Template.DataJson = []byte(data)
		b, err := w.fillTemplate(ctx, job, rj)
		if err != nil {
			t.Fatal(err)
		}
		html := string(b["index.html"])
		if string(b["style.css"]) != "h1{color:red}" {
			t.Errorf("assets not in the bundle: %v", b)
		}
		switch i {
		case 0:
			if !strings.Contains(html, "&lt;b&gt;Ada&lt;/b&gt;") || !strings.Contains(html, "<p>1 two</p>") || strings.Contains(html, "javascript:") {
				t.Errorf("filled: %s", html)
			}
		case 1:
			if !strings.Contains(html, "<h1>Bob</h1>") || strings.Contains(html, "<p>") {
				t.Errorf("filled: %s", html)
			}
		}
	}
	if n := len(w.templates.byKey); n != 1 {
		t.Errorf("%d cached, want 1", n)
	}
	if _, err := w.fillTemplate(ctx, &jobspb.Job{AccountId: "acct-b"}, rj); err != nil {
		t.Fatal(err)
	}
	if n := len(w.templates.byKey); n != 2 {
		t.Errorf("%d cached after another account's job, want 2 (never shared)", n)
	}
}

// A template's header and footer (DESIGN §6's header.html, footer.html)
// are filled with the same data as its page.
func TestFillTemplateMargins(t *testing.T) {
	w, rj := templateWorker(t, map[string]string{
		"index.html":  "<p>{{number}}</p>",
		"header.html": `<div style="font-size:8px">Invoice {{number}}</div>`,
		"footer.html": "<div>{{#if paid}}paid{{else}}due{{/if}}</div>",
	})
	rj.Template.DataJson = []byte(`{"number":"N-7","paid":false}`)
	b, err := w.fillTemplate(context.Background(), &jobspb.Job{AccountId: "a"}, rj)
	if err != nil {
		t.Fatal(err)
	}
	if h, f := string(b["header.html"]), string(b["footer.html"]); !strings.Contains(h, "Invoice N-7") || !strings.Contains(f, "due") {
		t.Errorf("header %q, footer %q", h, f)
	}
}

// What the client must fix is a result to answer with, naming the line and
// the data's path; a template deleted meanwhile says so.
func TestFillTemplateFailures(t *testing.T) {
	ctx := context.Background()
	job := &jobspb.Job{AccountId: "a"}
	w, rj := templateWorker(t, map[string]string{"index.html": "<p>\n{{formatNumber total 2}}</p>"})
	rj.Template.DataJson = []byte(`{"total":"not a number"}`)
	_, err := w.fillTemplate(ctx, job, rj)
	var tf *templateFailure
	if !errors.As(err, &tf) || tf.res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_CHECK_FAILED {
		t.Fatalf("bad value: %v", err)
	}
	if te := tf.res.Report.GetTemplateErrors(); len(te) != 1 || te[0].Line != 2 || te[0].Path != "total" {
		t.Errorf("template errors %v", te)
	}
	rj.Template.DataJson = []byte(`[1,2]`)
	if _, err := w.fillTemplate(ctx, job, rj); !errors.As(err, &tf) || tf.res.ErrorKind != jobspb.ErrorKind_ERROR_KIND_BAD_INPUT {
		t.Errorf("data not an object: %v", err)
	}
	gone, rj2 := templateWorker(t, nil)
	rj2.Files = []string{"index.html"}
	if _, err := gone.fillTemplate(ctx, job, rj2); !errors.Is(err, errTemplateGone) {
		t.Errorf("deleted template: %v", err)
	}
}

// The cache keeps at most its bytes, least recently used out first.
func TestTemplateCacheBound(t *testing.T) {
	c := newTemplateCache(100)
	for i, key := range []string{"a", "b", "c"} {
		c.put(&loadedTemplate{key: key, size: 40})
		if i == 1 {
			c.get("a") // a is used: b goes first
		}
	}
	if c.get("b") != nil || c.get("a") == nil || c.get("c") == nil || c.size != 80 {
		t.Errorf("cache holds %v, size %d", c.byKey, c.size)
	}
	c.put(&loadedTemplate{key: "huge", size: 101})
	if c.get("huge") != nil {
		t.Error("an entry larger than the cache was kept")
	}
}
