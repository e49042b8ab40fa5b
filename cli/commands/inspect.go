package commands

import (
	"context"
	"os"

	"github.com/docrender/docrender/client"
)

// runInspect is `docrender inspect FILE`: what POST /pdf/inspect says of
// the PDF, as JSON on standard output.
func runInspect(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("inspect")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("inspect takes one PDF FILE")
	}
	st, err := os.Stat(pos[0])
	if err != nil {
		return inputErrorf("%v", err)
	}
	if st.IsDir() {
		return inputErrorf("%s is a folder, not a PDF", pos[0])
	}
	c, err := a.client(needKey)
	if err != nil {
		return err
	}
	r, err := c.Inspect(ctx, client.UploadFile(pos[0], ""))
	if err != nil {
		return err
	}
	return writeJSON(a.env.Stdout, r)
}
