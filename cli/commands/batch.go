package commands

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/docrender/docrender/cli/progress"
	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

// runBatch is `docrender batch DIR`: every .html file of DIR is a
// document; the batch is started with progress tracking, followed over
// SSE (a bar on a terminal, lines elsewhere), and its ZIP fetched.
func runBatch(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("batch")
	out := fs.String("o", "", "")
	host := fs.Bool("host", false, "")
	name := fs.String("name", "", "")
	mode := fs.String("progress", string(progress.Auto), "")
	key := fs.String("idempotency-key", "", "")
	tmpl := fs.String("template", "", "")
	var opts multiFlag
	fs.Var(&opts, "option", "")
	rec := addRecordFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1 && *tmpl != "":
		return usageErrorf("batch --template takes one rows file (JSON Lines, - for standard input)")
	case len(pos) != 1:
		return usageErrorf("batch takes one DIR of .html files, or --template NAME ROWS.jsonl")
	}
	var ref *client.TemplateRef
	if *tmpl != "" {
		r, err := parseTemplateRef(*tmpl)
		if err != nil {
			return err
		}
		ref = &r
	}
	pm, err := progress.ParseMode(*mode)
	if err != nil {
		return usageErrorf("%v", err)
	}
	m, err := parseOptions(opts, reflect.TypeFor[client.PDFOptions]())
	if err != nil {
		return err
	}
	if err := rec.apply(m); err != nil {
		return err
	}
	if err := rec.inline(m); err != nil {
		return err
	}
	var docs []client.BatchDocument
	if ref != nil {
		// A template's documents are its rows' data (DESIGN §9); an
		// e-invoice's XML of a row goes in its options.
		if docs, err = a.batchTemplateDocuments(pos[0]); err != nil {
			return err
		}
	} else {
		if docs, err = batchDocuments(pos[0]); err != nil {
			return err
		}
		if err := rec.documentInvoices(pos[0], docs, m); err != nil {
			return err
		}
	}
	// A key of this run's own at least: a start retried after a lost
	// connection then joins the batch it started (DESIGN §4.20).
	req := client.BatchRequest{Documents: docs, BatchName: *name, Host: *host, IdempotencyKey: *key, Template: ref}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = "docrender-cli-" + rand.Text()
	}
	if len(m) > 0 {
		req.Options = &client.PDFOptions{Extra: m}
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	started, err := c.StartBatch(ctx, req)
	if err != nil {
		return err
	}
	id := term.Safe(started.BatchID)
	fmt.Fprintf(a.env.Stderr, "batch %s: %d documents\n", id, started.Total)
	disp := progress.New(a.env.Stderr, pm, a.stderrIsTerminal(), "rendering")
	final, err := c.FollowBatch(ctx, started.BatchID, disp.Update)
	disp.Close()
	if err != nil {
		if final == nil || !final.Done() && final.Status != client.StatusNotFound {
			// Following failed, not the batch, which goes on without us:
			// say where to find it.
			fmt.Fprintf(a.env.Stderr, "batch %s goes on at the service: %s/pdf/progress/%s\n", id, term.Safe(a.baseURL), id)
		}
		return err
	}
	if *host {
		bc, err := final.Completion()
		if err != nil {
			return err
		}
		a.printHosted(bc.DownloadURL, bc.ZipID, bc.ExpiresAt)
		return nil
	}
	d, err := c.DownloadBatch(ctx, started.BatchID)
	if err != nil {
		return err
	}
	return a.save(d, *out, zipName(started.BatchID))
}

// plainID is a batch ID fit to name a file: no path separator, no
// leading dot or dash (the service's IDs are URL-safe base64).
var plainID = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$`)

// zipName is where batch writes without -o: <batchId>.zip, or batch.zip
// when the service's ID is not a plain name.
func zipName(batchID string) string {
	if plainID.MatchString(batchID) {
		return batchID + ".zip"
	}
	return "batch.zip"
}

// batchDocuments reads each .html (.htm) file directly in dir, in name
// order, as a document named after the file.
func batchDocuments(dir string) ([]client.BatchDocument, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var docs []client.BatchDocument
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || (ext != ".html" && ext != ".htm") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		docs = append(docs, client.BatchDocument{FileName: strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())), HTMLContent: string(b)})
	}
	if len(docs) == 0 {
		return nil, inputErrorf("%s holds no .html files", dir)
	}
	return docs, nil
}
