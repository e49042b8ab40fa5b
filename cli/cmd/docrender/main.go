// Command docrender renders HTML to PDF, merges PDFs, runs batches with a
// progress bar, draws QR codes and manages hosted files of a docrender
// service. `docrender help` lists the commands, the environment it reads
// and its exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/docrender/docrender/cli/commands"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Run(ctx, os.Args[1:], commands.Env{
		Getenv: os.Getenv,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	})
	stop()
	os.Exit(code)
}
