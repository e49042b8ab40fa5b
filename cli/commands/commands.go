// Package commands is the docrender command line: each command is a small
// function over client/, run by Run, which turns every failure into a
// message and an exit code by its class.
package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/docrender/docrender/cli/term"
	"github.com/docrender/docrender/client"
)

// Exit codes, by class of failure (documented in `docrender help`).
const (
	ExitOK = 0
	// ExitUsage: the command line is wrong (unknown command or flag,
	// missing argument, malformed --option).
	ExitUsage = 1
	// ExitInput: the input is bad: a local file is missing or unreadable,
	// or the service refused the request (400, 404, 409, 413, 422).
	ExitInput = 2
	// ExitAuth: no or bad credentials, or not allowed (401, 403).
	ExitAuth = 3
	// ExitLimit: a quota, hosting limit or rate limit (429).
	ExitLimit = 4
	// ExitServer: the service failed or is unavailable (5xx).
	ExitServer = 5
	// ExitNetwork: the service could not be reached, or the connection broke.
	ExitNetwork = 6
	// ExitInterrupted: stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells do).
	ExitInterrupted = 130
)

// Env is what a run reads and writes: the environment and the standard files.
type Env struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// app is one run: its environment and configuration.
type app struct {
	env     Env
	baseURL string
	apiKey  string
	session string
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, a *app, args []string) error
}

func commandList() []command {
	return []command{
		{"render", "FILE|DIR|URL | --template NAME[@VERSION] [--data FILE.json|-] [-o out.pdf] [--option k=v ...] [--pdfa LEVEL] [--pdfua] [--attach FILE ...] [--einvoice PROFILE --einvoice-xml FILE] [--sign IDENTITY] [--toc] [--split[=false|auto]] [--stages JSON|@FILE] [--host] [--idempotency-key K]", "render an HTML file, a folder (index.html and its assets), a web page, or a stored template filled with data to PDF", runRender},
		{"merge", "a.pdf b.pdf ... [-o out.pdf] [--option k=v ...] [--pdfa LEVEL] [--attach FILE ...] [--sign IDENTITY] [--stages JSON|@FILE] [--host] [--idempotency-key K]", "merge PDFs in the order given", runMerge},
		{"batch", "DIR | --template NAME[@VERSION] ROWS.jsonl|- [-o out.zip] [--option k=v ...] [--pdfa LEVEL] [--attach FILE ...] [--einvoice PROFILE] [--sign IDENTITY] [--stages JSON|@FILE] [--host] [--progress auto|bar|plain|none] [--idempotency-key K]", "render every .html file of DIR, or a stored template per row of data, into one ZIP, showing progress", runBatch},
		{"screenshot", "FILE|DIR|URL [--format png|jpeg|webp] [--quality 1-100] [--full-page | --clip X,Y,W,H] [--width N] [--height N] [--omit-background] [-o FILE] [--option k=v ...] [--host]", "capture an HTML file, a folder or a web page as an image", runScreenshot},
		{"markdown", "FILE.md|DIR [--template template.html] [--no-outline] [-o out.pdf] [--option k=v ...] [--host]", "print a Markdown document (GitHub's dialect) as a PDF, its headings the outline", runMarkdown},
		{"office", "FILE ... [--merge] [--landscape] [--page-ranges 1-3,5] [-o FILE] [--option k=v ...] [--pdfa LEVEL] [--attach FILE ...] [--sign IDENTITY] [--stages JSON|@FILE] [--host]", "convert office documents (docx, xlsx, pptx, odt, rtf, csv, ...) to PDF: one each (a ZIP for several), or one merged PDF", runOffice},
		{"inspect", "FILE", "say what a PDF is and claims (pages, sizes, tags, PDF/A and PDF/UA claims, fonts, attachments, signatures) as JSON", runInspect},
		{"split", "FILE --ranges 1-3,4-9 | --every N [--stages JSON|@FILE] [--attach FILE ...] [-o out.zip] [--name NAME] [--host]", "cut a PDF into several, a ZIP of PDFs", runSplit},
		{"pages", "FILE [--select 3,1-2] [--rotate 2-3=90 ...] [--delete 4] [--stages JSON|@FILE] [--attach FILE ...] [-o out.pdf] [--name NAME] [--host]", "select, reorder, rotate or delete a PDF's pages", runPages},
		{"flatten", "FILE [--stages JSON|@FILE] [--attach FILE ...] [-o out.pdf] [--name NAME] [--host]", "burn a PDF's form fields and annotations into its pages", runFlatten},
		{"optimize", "FILE [--image-quality 1-100] [--max-image-dpi N] [--stages JSON|@FILE] [--attach FILE ...] [-o out.pdf] [--name NAME] [--host]", "make a PDF smaller (images recompressed and downsampled, objects merged)", runOptimize},
		{"metadata", "FILE [--title T] [--author A] [--subject S] [--keywords a,b] [--creator C] [--stages JSON|@FILE] [--attach FILE ...] [-o out.pdf] [--name NAME] [--host]", "rewrite a PDF's document information (title, author, ...)", runMetadata},
		{"text", "FILE [--markdown] [--pages 1-3] [-o out.txt] [--host]", "a PDF's text, or Markdown, on standard output", runText},
		{"images", "FILE [--format png|jpeg|webp] [--dpi N] [--pages 1-3] [-o FILE] [--name NAME] [--host]", "pictures of a PDF's pages: one image, or a ZIP of one a page", runImages},
		{"qr", "TEXT [-o qr.png] [--size N] [--margin N] [--ecc L|M|Q|H] [--dark #000] [--light #fff]", "draw a QR code as a PNG", runQR},
		{"template", "push NAME FILE|DIR ... [--sample-data FILE] | ls [--page N] [--limit N] [--json] | preview ID [--version N] [-o out.pdf] | rm ID ...", "store a template (a new version of NAME if stored), list, preview or delete your templates", runTemplate},
		{"files", "ls [--page N] [--limit N] [--json] | rm ID ...", "list or delete your hosted files (needs DOCRENDER_SESSION)", runFiles},
		{"usage", "[--json]", "this month's conversions and hosted files against your plan (needs DOCRENDER_SESSION)", runUsage},
		{"login", "EMAIL [--key NAME]", "sign in; prints export lines for DOCRENDER_SESSION (and a new DOCRENDER_API_KEY with --key)", runLogin},
		{"register", "EMAIL [--key NAME]", "create an account and sign in, as login does", runRegister},
		{"logout", "", "end the session in DOCRENDER_SESSION", runLogout},
		{"help", "[COMMAND]", "this help", nil},
		{"version", "", "the version of this command", nil},
	}
}

// Run runs the command line args (without the program name) and returns the exit code.
func Run(ctx context.Context, args []string, env Env) int {
	a := &app{env: env}
	g := flag.NewFlagSet("docrender", flag.ContinueOnError)
	g.SetOutput(io.Discard)
	g.StringVar(&a.baseURL, "url", env.Getenv("DOCRENDER_URL"), "")
	g.StringVar(&a.apiKey, "key", env.Getenv("DOCRENDER_API_KEY"), "")
	g.StringVar(&a.session, "session", env.Getenv("DOCRENDER_SESSION"), "")
	if err := g.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.help(env.Stdout, "")
			return ExitOK
		}
		return a.report(usageErrorf("%v", err))
	}
	if a.baseURL == "" {
		a.baseURL = client.DefaultBaseURL
	}
	rest := g.Args()
	if len(rest) == 0 {
		a.help(env.Stderr, "")
		return ExitUsage
	}
	name, rest := rest[0], rest[1:]
	switch name {
	case "help", "-h", "--help":
		topic := ""
		if len(rest) > 0 {
			topic = rest[0]
		}
		return a.help(env.Stdout, topic)
	case "version", "--version":
		fmt.Fprintln(env.Stdout, "docrender", client.Version)
		return ExitOK
	}
	for _, c := range commandList() {
		if c.name == name && c.run != nil {
			err := c.run(ctx, a, rest)
			if errors.Is(err, flag.ErrHelp) {
				a.help(env.Stdout, name)
				return ExitOK
			}
			return a.report(err)
		}
	}
	return a.report(usageErrorf("unknown command %q", name))
}

func (a *app) help(w io.Writer, topic string) int {
	if topic != "" {
		for _, c := range commandList() {
			if c.name == topic {
				fmt.Fprintf(w, "usage: docrender %s %s\n\n%s.\n", c.name, c.args, c.summary)
				if h := commandHelp[c.name]; h != "" {
					fmt.Fprintf(w, "\n%s", h)
				}
				return ExitOK
			}
		}
		fmt.Fprintf(a.env.Stderr, "docrender: no command %q\n", topic)
		return ExitUsage
	}
	fmt.Fprintf(w, "docrender: render HTML to PDF with a docrender service.\n\nusage: docrender [--url URL] [--key KEY] [--session TOKEN] COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commandList() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, generalHelp)
	return ExitOK
}

const generalHelp = `
Flags may come before or after a command's arguments; 'docrender help COMMAND'
shows a command's flags.

environment:
  DOCRENDER_URL       the service (default http://localhost:8080); --url wins
  DOCRENDER_API_KEY   the API key for render, merge, batch, qr, template,
                      screenshot, markdown and the PDF tools (split, ... images);
                      --key wins
  DOCRENDER_SESSION   a session token for files and usage (the service lets
                      only a signed-in user list and delete hosted files and
                      read usage); get one with
                        eval "$(docrender login you@example.com)"
                      which prints export lines and stores nothing on disk
  DOCRENDER_PASSWORD  the password for login and register (else read from stdin)

exit codes:
  0  success
  1  usage: unknown command or flag, missing argument, malformed --option
  2  bad input: a local file missing or unreadable, or the service refused
     the request (400, 404, 409, 413, 422)
  3  authentication: no API key or session, or the service answered 401 or 403
  4  limits: quota, hosted-file limit or rate limit (429)
  5  the service failed or is unavailable (5xx)
  6  network: the service could not be reached or the connection broke
  130  interrupted (Ctrl-C); a batch goes on at the service
`

var commandHelp = map[string]string{
	"render": `A FILE is uploaded alone (name it index.html or give it a .html extension).
A DIR is uploaded whole (hidden files left out) with paths relative to it, so
index.html finds css/site.css and img/logo.png by the links it has. A URL
(http:// or https://) is fetched by the service.

With --template, a stored template (docrender template push) is filled with
data and rendered; nothing but the data is sent:

  --template NAME[@VERSION]
                  the template's name, and a version (default the latest)
  --data FILE     its data, one JSON object ({"number": "2026-042", ...});
                  - reads standard input; without it the data is {} (a
                  missing field renders empty). A template that cannot be
                  filled with it is refused (exit 2) naming the template's
                  line and the data's path

  -o FILE         where to write the PDF (default: the input's name with .pdf,
                  or document.pdf for a URL, or with --template the data
                  file's name with .pdf (NAME.pdf for standard input); a
                  URL's or standard input's is not overwritten if it exists;
                  - for standard output)
  --option k=v    an option of the API (spec 2.1, DESIGN §6), repeatable:
                  format=Letter, margin.top=2cm, scale=0.8, printBackground=false,
                  metadata.title="Q3 report", metadata.keywords=a,b,
                  extraHttpHeaders.Accept-Language=fr, encryption.ownerPassword=s;
                  a value is JSON when it parses as JSON (true, 1.5,
                  {"top":"1cm"}) unless the option is text
  --host          store the PDF behind an expiring link and print the link
  --idempotency-key K
                  send Idempotency-Key K: the same command run again within
                  24 hours gets the same PDF without a new render or charge
                  (a different request under K is refused)

long documents (DESIGN §10; shorthands for --option toc=true, split=...):
  --toc           fill <nav data-toc></nav> with a table of contents: the
                  headings h1-h3, each with its page number and a link
  --split         print in slices at once and join them, whatever the length;
                  --split=false in one piece, whatever the length;
                  --split=auto (the default) in slices past the service's
                  DOCRENDER_SPLIT_PAGES pages. Give the value with "=".
                  A page with page references (--toc) or scripts prints in
                  one piece
` + fmt.Sprintf(recordHelp, "") + fmt.Sprintf(stagesHelp, "the PDF") + stagesAttachHelp,
	"merge": `  -o FILE         where to write the PDF (default merged.pdf, not overwritten if it
                  exists; - for standard output)
  --option k=v    fileName, userType, metadata.*, encryption.*, watermark.*
  --host          store the result behind an expiring link and print the link
  --idempotency-key K
                  as for render
` + fmt.Sprintf(recordHelp, "; the merged PDF is a PDF/A (--pdfa) whatever\n                  the inputs, or fails naming the rule an input breaks") +
		fmt.Sprintf(stagesHelp, "the merged PDF") + stagesAttachHelp,
	"office": `Each FILE's extension says its format: docx, doc, xlsx, xls, pptx, ppt,
odt, ods, odp, rtf, txt, csv and the other forms LibreOffice reads.

  -o FILE         where to write (default: the file's name with .pdf for one
                  file or with --merge, documents.zip for several; not
                  overwritten if it exists; - for standard output)
  --merge         one PDF of all the files, in the order given
  --landscape     every page landscape
  --page-ranges R the pages of each document, 1-3,5
  --option k=v    fileName, userType, metadata.*, encryption.*, watermark.*
  --host          store the result behind an expiring link and print the link
` + fmt.Sprintf(recordHelp, "") + fmt.Sprintf(stagesHelp, "each PDF") + stagesAttachHelp,
	"screenshot": `FILE, DIR and URL are sent as render sends them; the waits of render's
options apply (--option waitForSelector=#ready, --option waitDelay=1s).

  -o FILE           where to write the image (default: the input's name, or
                    screenshot for a URL, with the format's extension; not
                    overwritten if it exists; - for standard output)
  --format F        png (default), jpeg or webp
  --quality N       1 to 100, for jpeg and webp
  --width N, --height N
                    the view in CSS pixels (default 1280 x 800)
  --full-page       the whole page, past the view's height
  --clip X,Y,W,H    a rectangle of the page instead of the view
  --omit-background a page without a background of its own is transparent
                    (png, webp)
  --option k=v      any option of the route (userAgent=..., cookies=[...])
  --host            store the image behind an expiring link and print the link
`,
	"markdown": `FILE.md is sent alone; a DIR is sent whole (index.md, else its first .md
file, with the images it links by relative path).

  -o FILE           where to write the PDF (default: the input's name with
                    .pdf, not overwritten if it exists; - for standard output)
  --template FILE   an HTML page with {{content}} where the document goes,
                    its own style and text around it
  --no-outline      no bookmarks (by default the headings are the outline)
  --option k=v      any print option of render (format=Letter, margin.top=2cm,
                    footerTemplate=...)
  --host            store the PDF behind an expiring link and print the link
`,
	"split": fmt.Sprintf(toolHelp, "FILE-split.zip") + "  --ranges R      one PDF per comma-separated range, in the order given\n  --every N       one PDF per N pages, the last with what is left\n" +
		fmt.Sprintf(stagesHelp, "each part") + toolAttachHelp,
	"pages": fmt.Sprintf(toolHelp, "FILE-pages.pdf") + "  --select S      pages in the order wanted (repeats allowed)\n  --rotate P=DEG  turn pages P clockwise by DEG (a multiple of 90), repeatable\n  --delete D      pages to leave out\nEvery page number names a page of the uploaded PDF.\n" +
		fmt.Sprintf(stagesHelp, "the output") + toolAttachHelp,
	"flatten": fmt.Sprintf(toolHelp, "FILE-flat.pdf") + fmt.Sprintf(stagesHelp, "the flattened PDF") + toolAttachHelp,
	"optimize": fmt.Sprintf(toolHelp, "FILE-optimized.pdf") + "  --image-quality N   JPEG quality of recompressed images (service default 75)\n  --max-image-dpi N   downsample images to N dpi (default 150; 0 keeps them)\nThe sizes before and after are printed on standard error.\n" +
		fmt.Sprintf(stagesHelp, "the smaller PDF") + toolAttachHelp,
	"metadata": fmt.Sprintf(toolHelp, "FILE-metadata.pdf") + "  --title T, --author A, --subject S, --creator C\n                  the document information, written to the Info dictionary\n                  and the XMP metadata (at least one of these or --keywords)\n  --keywords K    comma-separated keywords\n" +
		fmt.Sprintf(stagesHelp, "the PDF once its information is written") + toolAttachHelp,
	"text":   fmt.Sprintf(toolHelp, "standard output") + "  --markdown      Markdown (headings, lists, tables) instead of plain text\n  --pages P       the pages to read (default all)\n",
	"images": fmt.Sprintf(toolHelp, "FILE-images.png for one page, FILE-images.zip for more") + "  --format F      png (default), jpeg or webp\n  --dpi N         resolution, 1 to 600 (default 72)\n  --pages P       the pages to draw (default all)\n",
	"batch": `Each .html (or .htm) file directly in DIR is one document, named after
the file; a document's assets must be inline (data: URLs) or on the web.

With --template NAME[@VERSION] (a stored template, default its latest
version) the argument is a rows file in JSON Lines (- for standard input):
one document per line, each line exactly

  {"data": {...}, "fileName": "invoice-42", "options": {"scale": 0.9}}

data (a JSON object, required) fills the template; fileName (default
NAME-<n>) and options (the document's own print options over the batch's)
may be left out; blank lines are skipped. Any other line (not one JSON
object, no data, an unknown key, bad options) stops the command before
anything is sent, naming the line. Rows that are the data themselves
become lines with: jq -c '{data: .}' rows.json


  -o FILE         where to write the ZIP (default BATCHID.zip, not overwritten
                  if it exists)
  --name NAME     the batch's name (the ZIP's, default batch-<timestamp>)
  --option k=v    options for every document, as for render
  --host          store the ZIP behind an expiring link and print the link
  --progress M    auto (default: a bar when standard error is a terminal,
                  plain lines otherwise), bar, plain or none
  --idempotency-key K
                  as for render: run again, the command follows the batch the
                  first run started. Without it each run sends a key of its
                  own, so that a start retried after a lost connection
                  starts one batch, not two
` + fmt.Sprintf(recordHelp, " for the documents without their own:\n                  a document NAME.html's own is NAME.xml beside it") +
		fmt.Sprintf(stagesHelp, "each document's PDF") + "                  (with --stages, --attach files go in the attachments step:\n                  {\"op\":\"attachments\",\"attachments\":[...]})\n",
	"qr": `  -o FILE         where to write the PNG (default qr.png; - for standard output)
  --size N        width and height in pixels, 32 to 2048 (default 200)
  --margin N      quiet zone in modules, 0 to 10 (default 1)
  --ecc L|M|Q|H   error correction (default M)
  --dark, --light colours, #rgb or #rrggbb
`,
	"files": `  ls              your live hosted files, newest first
    --page N --limit N   paging (default 1 and 20; limit at most 100)
    --json              the list as JSON
  rm ID ...       delete hosted files
`,
	"template": `Templates (DESIGN §9) are stored once and then rendered with data only.
They take the API key, or failing that the session.

  push NAME FILE|DIR ...
                  store the files as the template NAME: a FILE under its base
                  name, a DIR's files by their paths in it (the entry is
                  index.html, else the first .html file); NAME stored already
                  gets a new version. Prints the template's ID
    --sample-data FILE  a JSON object the preview renders (- for standard input)
    --json              the answer as JSON
  ls              your templates, newest first
    --page N --limit N   paging (default 1 and 20; limit at most 100)
    --json              the list as JSON
  preview ID      render a version's sample data (a conversion) to a PDF
    --version N         that version (default the latest)
    -o FILE             where to write it (default ID-preview.pdf, not
                        overwritten if it exists; - for standard output)
  rm ID ...       delete templates, every version (renders already queued finish)

Render a stored template with 'docrender render --template NAME --data FILE',
a batch of them with 'docrender batch --template NAME ROWS.jsonl'.
`,
	"usage": `  --json          as JSON
`,
	"login": `Prints "export DOCRENDER_SESSION='...'" for eval; nothing is stored on disk.
The password comes from DOCRENDER_PASSWORD, else from standard input.

  --key NAME      also create an API key of that name and print its export line
`,
}

// recordHelp is the help of recordFlags; %s adds to --einvoice-xml's.
const recordHelp = `
documents of record (DESIGN §8; shorthands for --option, which they combine with):
  --pdfa LEVEL    PDF/A: 2b, 2u, 3b or 3u (only 3b and 3u may embed files)
  --pdfua         PDF/UA-1 (needs a title: <title> or --option metadata.title=...)
  --lang TAG      the document language, BCP 47 (en, de-DE)
  --attach FILE   embed FILE in the PDF, repeatable
  --attachment-relationship R
                  on a PDF/A-3: Data (default), Source, Alternative,
                  Supplement or Unspecified
  --einvoice PROFILE
                  a Factur-X / ZUGFeRD invoice: MINIMUM, "BASIC WL", BASIC,
                  "EN 16931", EXTENDED or XRECHNUNG (makes a PDF/A-3b)
  --einvoice-xml FILE
                  the invoice's CII XML%s
  --sign IDENTITY sign (PAdES) with a signing identity the operator granted
                  your account (not with encryption)
  --sign-level L  B-B (default) or B-T (with a time stamp)
  --sign-reason, --sign-location, --sign-contact TEXT
                  the signature's reason, location and contact
                  (a visible box: --option sign.visible.x=50 ...y, width,
                  height, page, text; points from the page's bottom left)
`

// exitError is a failure with its exit code decided where it happened.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, args...)}
}

func inputErrorf(format string, args ...any) error {
	return &exitError{code: ExitInput, msg: fmt.Sprintf(format, args...)}
}

// exitCode is the exit code of err's class.
func exitCode(err error) int {
	var ee *exitError
	var ae *client.Error
	var ue *client.UploadError
	var ne net.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		// Before *client.Error: an interrupt during the wait before a
		// retry carries the answer that was to be retried. Before
		// net.Error: a request cut by the interrupt is a *url.Error.
		return ExitInterrupted
	case errors.As(err, &ue):
		// Before net.Error: a local file's error (a syscall.Errno) reads as one.
		return ExitInput
	case errors.As(err, &ae):
		switch s := ae.StatusCode; {
		case s == 401 || s == 403:
			return ExitAuth
		case s == 429:
			return ExitLimit
		case s >= 500:
			return ExitServer
		case s >= 400:
			return ExitInput
		}
		return ExitServer
	case errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded):
		return ExitNetwork
	}
	return ExitInput
}

// report writes err for a person and returns its exit code. Every text
// that may come from the service goes through term.Safe.
func (a *app) report(err error) int {
	code := exitCode(err)
	if err == nil {
		return code
	}
	w := a.env.Stderr
	safe := term.Safe
	var ae *client.Error
	var ue *client.UploadError
	switch {
	case code == ExitInterrupted:
		fmt.Fprintln(w, "docrender: interrupted")
	case errors.As(err, &ue):
		fmt.Fprintf(w, "docrender: cannot read %s: %s\n", safe(ue.Name), safe(ue.Err.Error()))
	case errors.As(err, &ae):
		fmt.Fprintf(w, "docrender: %s [%d %s]\n", safe(ae.Message), ae.StatusCode, safe(ae.Code))
		if ae.Field != "" {
			fmt.Fprintf(w, "  field: %s\n", safe(ae.Field))
		}
		if ae.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", safe(ae.Hint))
		}
		for _, d := range ae.Details {
			if d.Kind == "template" {
				// A template that could not be filled: its line, the data's path.
				at := fmt.Sprintf("line %d", d.Line)
				if d.Path != "" {
					at += ", data " + safe(d.Path)
				}
				fmt.Fprintf(w, "  template %s: %s\n", at, safe(d.Message))
				continue
			}
			if d.URL != "" {
				fmt.Fprintf(w, "  %s: %s (%s)\n", safe(d.Kind), safe(d.Message), safe(d.URL))
			} else {
				fmt.Fprintf(w, "  %s: %s\n", safe(d.Kind), safe(d.Message))
			}
		}
		for _, f := range ae.ReceivedFiles {
			fmt.Fprintf(w, "  received: %s (%s)\n", safe(f.Name), safe(f.MimeType))
		}
		if ae.RetryAfter > 0 {
			fmt.Fprintf(w, "  retry after: %s\n", ae.RetryAfter)
		}
		if ae.RequestID != "" {
			fmt.Fprintf(w, "  request ID: %s\n", safe(ae.RequestID))
		}
	case code == ExitNetwork:
		fmt.Fprintf(w, "docrender: cannot reach the service at %s: %s\n", safe(a.baseURL), safe(strings.TrimPrefix(err.Error(), "docrender: ")))
		fmt.Fprintln(w, "  hint: is it running? DOCRENDER_URL sets its address.")
	default:
		// Messages of this command may span lines on purpose (a hint on
		// the next); those of the service's answers keep no control
		// character but the newline.
		fmt.Fprintf(w, "docrender: %s\n", term.SafeLines(strings.TrimPrefix(err.Error(), "docrender: ")))
		if code == ExitUsage {
			fmt.Fprintln(w, "  run 'docrender help' for the commands and their arguments")
		}
	}
	return code
}

// Credentials a command needs.
type need int

const (
	needKey need = 1 << iota
	needSession
	// needKeyOrSession: either will do (the template routes take both).
	needKeyOrSession
)

// client returns a client of the service, checking the credentials the command needs.
func (a *app) client(n need) (*client.Client, error) {
	if n&needKey != 0 && a.apiKey == "" {
		return nil, &exitError{code: ExitAuth, msg: "no API key: set DOCRENDER_API_KEY (create one in the dashboard at " +
			a.baseURL + "/dashboard, or with: docrender login EMAIL --key NAME)"}
	}
	if n&needKeyOrSession != 0 && a.apiKey == "" && a.session == "" {
		return nil, &exitError{code: ExitAuth, msg: "no API key or session: set DOCRENDER_API_KEY or DOCRENDER_SESSION (e.g. with\n" +
			"  eval \"$(docrender login you@example.com --key cli)\")"}
	}
	if n&needSession != 0 && a.session == "" {
		return nil, &exitError{code: ExitAuth, msg: "this command needs a signed-in session: set DOCRENDER_SESSION, e.g. with\n" +
			"  eval \"$(docrender login you@example.com)\""}
	}
	c, err := client.New(a.baseURL, client.WithAPIKey(a.apiKey), client.WithSessionToken(a.session),
		client.WithUserAgent("docrender-cli/"+client.Version))
	if err != nil {
		return nil, usageErrorf("DOCRENDER_URL: %v", err)
	}
	return c, nil
}

// stderrIsTerminal reports whether progress may be drawn as a bar.
func (a *app) stderrIsTerminal() bool {
	f, ok := a.env.Stderr.(*os.File)
	return ok && term.IsTerminal(f)
}
