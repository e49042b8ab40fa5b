package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

// runFiles is `docrender files ls|rm`.
func runFiles(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usageErrorf("files takes ls or rm ID ...")
	}
	switch args[0] {
	case "ls", "list":
		return filesList(ctx, a, args[1:])
	case "rm", "delete":
		return filesRemove(ctx, a, args[1:])
	case "-h", "--help", "help":
		return flag.ErrHelp
	}
	return usageErrorf("files %s: want ls or rm", args[0])
}

func filesList(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("files ls")
	page := fs.Int("page", 0, "")
	limit := fs.Int("limit", 0, "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("files ls takes no arguments")
	}
	c, err := a.client(needSession)
	if err != nil {
		return err
	}
	list, err := c.ListHosted(ctx, *page, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.env.Stdout, list)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSIZE\tDOWNLOADS\tPUBLIC\tEXPIRES")
	for _, f := range list.PDFs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%v\t%s\n", term.Safe(f.PdfID), term.Safe(f.OriginalName), humanBytes(f.FileSize), f.Downloads, f.IsPublic,
			f.ExpiresAt.Local().Format("2006-01-02 15:04"))
	}
	tw.Flush()
	p := list.Pagination
	fmt.Fprintf(a.env.Stderr, "%d hosted files; page %d of %d\n", list.Total, p.Page, max(p.TotalPages, 1))
	return nil
}

func filesRemove(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("files rm")
	ids, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return usageErrorf("files rm takes the IDs of the files to delete")
	}
	c, err := a.client(needSession)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := c.DeleteHosted(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stderr, "deleted %s\n", id)
	}
	return nil
}

// runUsage is `docrender usage`.
func runUsage(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("usage")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("usage takes no arguments")
	}
	c, err := a.client(needSession)
	if err != nil {
		return err
	}
	u, err := c.Usage(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(a.env.Stdout, u)
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "plan\t%s\n", term.Safe(u.Plan))
	fmt.Fprintf(tw, "period\t%s\n", term.Safe(u.Period))
	fmt.Fprintf(tw, "conversions\t%d of %d\n", u.ConversionsUsed, u.ConversionsLimit)
	fmt.Fprintf(tw, "hosted files\t%d of %d\n", u.HostedCount, u.HostedLimit)
	return tw.Flush()
}

func runLogin(ctx context.Context, a *app, args []string) error {
	return signIn(ctx, a, "login", args)
}

func runRegister(ctx context.Context, a *app, args []string) error {
	return signIn(ctx, a, "register", args)
}

// What the gateway issues (gateway/account): a session token is 32 random
// bytes in unpadded base64url (the gateway takes at most 100 characters),
// an API key drk_ and 40 base62 characters. Anything else is not printed
// for the shell to eval: a hostile or forged answer could carry commands.
var (
	sessionTokenForm = regexp.MustCompile(`^[A-Za-z0-9_-]{16,100}$`)
	apiKeyForm       = regexp.MustCompile(`^drk_[A-Za-z0-9]{40}$`)
)

// exportLine is a line for eval, its value single-quoted (the forms
// above allow no quote; quoting is the second line of defence).
func exportLine(name, value string) string {
	return "export " + name + "='" + value + "'\n"
}

// signIn is login and register: it prints export lines for the shell to
// eval, and stores nothing.
func signIn(ctx context.Context, a *app, verb string, args []string) error {
	fs := newFlagSet(verb)
	keyName := fs.String("key", "", "")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("%s takes one EMAIL", verb)
	}
	password, err := a.password()
	if err != nil {
		return err
	}
	c, err := a.client(0)
	if err != nil {
		return err
	}
	var s *client.Session
	if verb == "register" {
		s, err = c.Register(ctx, pos[0], password)
	} else {
		s, err = c.Login(ctx, pos[0], password)
	}
	if err != nil {
		return err
	}
	if !sessionTokenForm.MatchString(s.Token) {
		return malformedAnswer("session token")
	}
	fmt.Fprint(a.env.Stdout, exportLine("DOCRENDER_SESSION", s.Token))
	if *keyName != "" {
		k, err := c.CreateKey(ctx, *keyName, nil)
		if err != nil {
			return err
		}
		if !apiKeyForm.MatchString(k.Key) {
			return malformedAnswer("API key")
		}
		fmt.Fprint(a.env.Stdout, exportLine("DOCRENDER_API_KEY", k.Key))
	}
	fmt.Fprintf(a.env.Stderr, "signed in as %s (%s plan)\n", term.Safe(s.User.Email), term.Safe(s.User.Plan))
	return nil
}

// malformedAnswer refuses a credential not of the form the service issues.
func malformedAnswer(what string) error {
	return &exitError{code: ExitServer, msg: "the service answered a " + what +
		" not of the form it issues; not printing it (is DOCRENDER_URL the docrender service?)"}
}

// password is DOCRENDER_PASSWORD, else a line of standard input (asked
// for, without echo, on a terminal).
func (a *app) password() (string, error) {
	if p := a.env.Getenv("DOCRENDER_PASSWORD"); p != "" {
		return p, nil
	}
	if f, ok := a.env.Stdin.(*os.File); ok && term.IsTerminal(f) {
		fmt.Fprint(a.env.Stderr, "Password: ")
		restore, _ := term.NoEcho(f)
		defer func() { restore(); fmt.Fprintln(a.env.Stderr) }()
	}
	line, err := bufio.NewReader(a.env.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", inputErrorf("reading the password: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", inputErrorf("no password: set DOCRENDER_PASSWORD or type it on standard input")
	}
	return line, nil
}

func runLogout(ctx context.Context, a *app, args []string) error {
	fs := newFlagSet("logout")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	c, err := a.client(needSession)
	if err != nil {
		return err
	}
	if err := c.Logout(ctx); err != nil {
		return err
	}
	fmt.Fprintln(a.env.Stdout, "unset DOCRENDER_SESSION")
	fmt.Fprintln(a.env.Stderr, "signed out")
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
