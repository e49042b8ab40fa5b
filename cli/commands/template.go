package commands

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

// runTemplate is `docrender template push|ls|preview|rm` (DESIGN §9): stored
// templates, with the API key or the session.
func runTemplate(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usageErrorf("template takes push NAME FILE|DIR ..., ls, preview ID, or rm ID ...")
	}
	switch args[0] {
	case "push":
		return templatePush(ctx, a, args[1:])
	case "ls", "list":
		return templateList(ctx, a, args[1:])
	case "rm", "delete":
		return templateRemove(ctx, a, args[1:])
	case "preview":
		return templatePreview(ctx, a, args[1:])
	case "-h", "--help", "help":
		return flag.ErrHelp
	}
	return usageErrorf("template %s: want push, ls, preview or rm", args[0])
}

// templateUploads are the files of FILE and DIR arguments: a file under
// its base name, a folder's files by their paths inside it.
func templateUploads(paths []string) ([]client.Upload, error) {
	var ups []client.Upload
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if !st.IsDir() {
			ups = append(ups, client.UploadFile(p, ""))
			continue
		}
		dir, err := client.UploadDir(p)
		if err != nil {
			return nil, inputErrorf("%v", err)
		}
		if len(dir) == 0 {
			return nil, inputErrorf("%s holds no files", p)
		}
		ups = append(ups, dir...)
	}
	return ups, nil
}

func templatePush(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("template push")
	sample := fs.String("sample-data", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageErrorf("template push takes the template's NAME and its FILEs or a DIR")
	}
	up := client.TemplateUpload{Name: pos[0]}
	if up.Files, err = templateUploads(pos[1:]); err != nil {
		return err
	}
	if *sample != "" {
		if up.SampleData, err = a.readInput(*sample); err != nil {
			return err
		}
	}
	c, err := a.client(needKeyOrSession)
	if err != nil {
		return err
	}
	st, err := c.UploadTemplate(ctx, up)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.env.Stdout, st)
	}
	fmt.Fprintf(a.env.Stdout, "%s\n", term.Safe(st.ID))
	fmt.Fprintf(a.env.Stderr, "stored %s version %d (%s)\n", term.Safe(st.Name), st.Version, humanBytes(st.Size))
	return nil
}

// readInput reads a local file, or standard input for "-".
func (a *app) readInput(name string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(a.env.Stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	return b, nil
}

func templateList(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("template ls")
	page := fs.Int("page", 0, "")
	limit := fs.Int("limit", 0, "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("template ls takes no arguments")
	}
	c, err := a.client(needKeyOrSession)
	if err != nil {
		return err
	}
	list, err := c.Templates(ctx, *page, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.env.Stdout, list)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tVERSION\tUPDATED")
	for _, t := range list.Templates {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", term.Safe(t.ID), term.Safe(t.Name), t.LatestVersion, t.UpdatedAt.Local().Format("2006-01-02 15:04"))
	}
	tw.Flush()
	p := list.Pagination
	fmt.Fprintf(a.env.Stderr, "%d templates; page %d of %d\n", list.Total, p.Page, max(p.TotalPages, 1))
	return nil
}

func templateRemove(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("template rm")
	ids, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageErrorf("template rm takes the IDs of the templates to delete (docrender template ls shows them)")
	}
	c, err := a.client(needKeyOrSession)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := c.DeleteTemplate(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stderr, "deleted %s\n", term.Safe(id))
	}
	return nil
}
