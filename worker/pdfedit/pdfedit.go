// Package pdfedit is the PDF editing of the render workers: merging PDFs
// (POST /pdf/merge, spec 4.2) and stamping watermarks (DESIGN §4.17), built
// on pdfcpu.
//
// Every input PDF is read and validated exactly once, in pdfcpu's relaxed
// validation mode, so that ordinary real-world PDFs (Chromium, qpdf, office
// suites) pass. An input that cannot be used (not a PDF, corrupt, truncated,
// password-protected) yields a *BadInputError naming it; pdfcpu panics are
// recovered and reported the same way, so a hostile upload never takes the
// worker down.
//
// pdfcpu's configuration directory is disabled on first use
// (api.DisableConfigDir): the worker never writes ~/.config/pdfcpu, and
// watermarks use the built-in core fonts (Helvetica).
package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/validate"
)

// BadInputError reports an input PDF that cannot be used: not a PDF,
// corrupt, truncated or password-protected. It is the client's fault (a 4xx,
// jobspb.ErrorKind_ERROR_KIND_BAD_INPUT), not the worker's.
type BadInputError struct {
	// Name is the client-side name of the offending input.
	Name string
	// Reason says what is wrong with it, in words fit for the client.
	Reason string
	// cause is pdfcpu's error, when it gave one.
	cause error
}

func (e *BadInputError) Error() string {
	if e.Name == "" {
		return "invalid PDF: " + e.Reason
	}
	return fmt.Sprintf("invalid PDF %q: %s", e.Name, e.Reason)
}

// ErrNoInputs is returned by Merge when it is given no inputs.
var ErrNoInputs = errors.New("pdfedit: no PDF files were provided for merging")

var (
	baseConfOnce sync.Once
	baseConf     model.Configuration
)

// newConf returns a fresh pdfcpu configuration for cmd: relaxed validation,
// no optimisation pass, offline.
func newConf(cmd model.CommandMode) *model.Configuration {
	baseConfOnce.Do(func() {
		if model.ConfigPath == "default" {
			// Nobody in this process chose a pdfcpu config dir: do not create
			// one under the worker's home, use the built-in defaults.
			api.DisableConfigDir()
		}
		baseConf = *model.NewDefaultConfiguration()
	})
	c := baseConf
	c.AllowedRevocationHosts = nil
	c.Cmd = cmd
	c.ValidationMode = model.ValidationRelaxed
	c.ValidateLinks = false
	c.Optimize = false
	c.OptimizeBeforeWriting = false
	c.OptimizeResourceDicts = false
	c.OptimizeDuplicateContentStreams = false
	// Merge keeps the inputs' own outlines (bookmarks), adding none.
	c.CreateBookmarks = cmd == model.MERGECREATE
	c.MergeBookmarkMode = model.MergeBookmarkModePreserve
	c.Offline = true
	c.UserPW, c.OwnerPW = "", ""
	c.PostProcessValidate = false
	// Classic xref table, no object streams, like qpdf --empty --pages:
	// compressing object streams cost ~15% of a merge's CPU (measured with
	// BenchmarkMerge50x10) for an output about a third smaller only when the
	// pages are tiny; page content and fonts dominate real documents.
	c.WriteObjectStream = false
	c.WriteXRefStream = false
	return &c
}

// maxReason caps how much of pdfcpu's error text reaches the client.
const maxReason = 300

func reasonFor(err error) string {
	switch {
	case errors.Is(err, pdfcpu.ErrEncrypted),
		errors.Is(err, pdfcpu.ErrWrongPassword),
		errors.Is(err, pdfcpu.ErrOwnerPasswordRequired):
		return "the PDF is encrypted or password-protected"
	case errors.Is(err, pdfcpu.ErrEmptyInput):
		return "the file is empty"
	}
	return "corrupt or unreadable PDF: " + truncate(strings.TrimSpace(err.Error()))
}

// truncate caps s at maxReason bytes, keeping it valid UTF-8.
func truncate(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "..."
}

// sniffPDF checks that the input starts with a PDF header (allowing the
// leading junk of up to 1 KiB that readers tolerate) and rewinds it.
func sniffPDF(name string, rs io.ReadSeeker) error {
	if rs == nil {
		return &BadInputError{Name: name, Reason: "no content"}
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("pdfedit: rewind %q: %w", name, err)
	}
	head := make([]byte, 1024)
	n, err := io.ReadFull(rs, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("pdfedit: read %q: %w", name, err)
	}
	if n == 0 {
		return &BadInputError{Name: name, Reason: "the file is empty"}
	}
	if !bytes.Contains(head[:n], []byte("%PDF-")) {
		return &BadInputError{Name: name, Reason: "not a PDF file"}
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("pdfedit: rewind %q: %w", name, err)
	}
	return nil
}

// inMemory returns rs itself when it already is in memory, else its whole
// content in a bytes.Reader: pdfcpu seeks and reads through a fresh 4 KiB
// buffer for every object, which costs a system call per object on a file.
func inMemory(name string, rs io.ReadSeeker) (io.ReadSeeker, error) {
	switch rs.(type) {
	case *bytes.Reader, *strings.Reader:
		return rs, nil
	}
	size, err := rs.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("pdfedit: size of %q: %w", name, err)
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("pdfedit: rewind %q: %w", name, err)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(rs); err != nil {
		return nil, fmt.Errorf("pdfedit: read %q: %w", name, err)
	}
	return bytes.NewReader(buf.Bytes()), nil
}

// readPDF reads and validates one input into a pdfcpu context. Any failure
// caused by the bytes themselves, including a pdfcpu panic, is a
// *BadInputError naming the input; cancellation returns ctx's error.
func readPDF(ctx context.Context, name string, rs io.ReadSeeker, conf *model.Configuration) (pc *model.Context, err error) {
	if err := sniffPDF(name, rs); err != nil {
		return nil, err
	}
	rs, err = inMemory(name, rs)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			pc = nil
			err = &BadInputError{Name: name, Reason: fmt.Sprintf("corrupt or unreadable PDF (%v)", r)}
		}
	}()
	pc, err = pdfcpu.ReadWithContext(ctx, rs, conf)
	if err == nil {
		if pc == nil || pc.XRefTable == nil {
			return nil, &BadInputError{Name: name, Reason: "corrupt or unreadable PDF"}
		}
		err = validate.XRefTable(pc)
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &BadInputError{Name: name, Reason: reasonFor(err), cause: err}
	}
	if pc.PageCount < 1 {
		return nil, &BadInputError{Name: name, Reason: "the PDF has no pages"}
	}
	repairPageTree(pc)
	return pc, nil
}

// repairPageTree sets the /Type of page tree nodes that lack it or have a
// wrong one (/Pages when the node has /Kids, else /Page), as qpdf does:
// relaxed validation lets such files through, pdfcpu's writer does not.
func repairPageTree(pc *model.Context) {
	root, err := pc.Catalog()
	if err != nil {
		return
	}
	ref := root.IndirectRefEntry("Pages")
	if ref == nil {
		return
	}
	seen := map[int]bool{}
	var walk func(ref types.IndirectRef, depth int)
	walk = func(ref types.IndirectRef, depth int) {
		nr := ref.ObjectNumber.Value()
		if seen[nr] || depth > 64 {
			return
		}
		seen[nr] = true
		d, err := pc.DereferenceDict(ref)
		if err != nil || d == nil {
			return
		}
		kids := d.ArrayEntry("Kids")
		want := "Page"
		if kids != nil {
			want = "Pages"
		}
		if t := d.Type(); t == nil || *t != want {
			d["Type"] = types.Name(want)
		}
		for _, k := range kids {
			if kr, ok := k.(types.IndirectRef); ok {
				walk(kr, depth+1)
			}
		}
	}
	walk(*ref, 0)
}

// errWriter remembers the first error of the writer it wraps, to tell the
// caller's I/O failures from pdfcpu refusing to serialise the document.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// errContent marks a write failure caused by the document, not by w.
var errContent = errors.New("pdfcpu cannot write the document")

// writePDF writes pc to w. A failure of w is returned as such; pdfcpu failing
// (or panicking) on the document's content wraps errContent.
func writePDF(pc *model.Context, w io.Writer) (err error) {
	ew := &errWriter{w: w}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pdfedit: write PDF: %w: %v", errContent, r)
		}
		if ew.err != nil {
			err = fmt.Errorf("pdfedit: write PDF: %w", ew.err)
		}
	}()
	fixTrailerSize(pc)
	if err := api.WriteContext(pc, ew); err != nil {
		return fmt.Errorf("pdfedit: write PDF: %w: %v", errContent, err)
	}
	return nil
}

// fixTrailerSize makes the trailer's /Size one more than the highest object
// number written, as the PDF specification requires (qpdf --check warns
// otherwise). pdfcpu counts /Size up per object a merge appends and writes
// only the objects reachable from the trailer, so numbers held by objects
// nobody references any more (an appended input's catalog and page tree
// root, the object-stream and xref-stream containers of qpdf-style inputs,
// whose objects were unpacked on reading) leave /Size too high. Those
// entries leave the table, and /Size, from which pdfcpu also numbers the
// objects it adds while writing, follows the highest number left.
func fixTrailerSize(pc *model.Context) {
	live := reachable(pc)
	top := 0
	for nr, e := range pc.Table {
		if e != nil && !e.Free && !live[nr] {
			delete(pc.Table, nr)
			continue
		}
		top = max(top, nr)
	}
	size := top + 1
	pc.Size = &size
}

// reachable is the set of object numbers reachable from the trailer's Root
// and Info, and from the name trees pdfcpu holds apart and binds into the
// catalog only while it writes (an attachment's file specification is
// referenced from nowhere else until then): a superset of what pdfcpu
// writes, which walks the same graph.
func reachable(pc *model.Context) map[int]bool {
	seen := make(map[int]bool, len(pc.Table))
	var stack []types.Object
	for _, ref := range []*types.IndirectRef{pc.Root, pc.Info, pc.Encrypt} {
		if ref != nil {
			stack = append(stack, *ref)
		}
	}
	for _, tree := range pc.Names {
		_ = tree.Process(pc.XRefTable, func(_ *model.XRefTable, _ string, o *types.Object) error {
			if o != nil && *o != nil {
				stack = append(stack, *o)
			}
			return nil
		})
	}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := o.(type) {
		case types.IndirectRef:
			nr := v.ObjectNumber.Value()
			if seen[nr] {
				continue
			}
			seen[nr] = true
			if e := pc.Table[nr]; e != nil && !e.Free && e.Object != nil {
				stack = append(stack, e.Object)
			}
		case types.Dict:
			for _, x := range v {
				stack = append(stack, x)
			}
		case types.StreamDict:
			for _, x := range v.Dict {
				stack = append(stack, x)
			}
		case types.Array:
			stack = append(stack, v...)
		}
	}
	return seen
}

// save writes an edited document to w unless ctx has ended; a defect of
// the document found only while writing is a *BadInputError (partial
// output may be left in w).
func save(ctx context.Context, pc *model.Context, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writePDF(pc, w); err != nil {
		if errors.Is(err, errContent) {
			return &BadInputError{Reason: contentReason(err)}
		}
		return err
	}
	return nil
}

// contentReason turns an errContent failure into a BadInputError reason.
func contentReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "pdfedit: write PDF: "+errContent.Error()+": ")
	return "corrupt or unreadable PDF: " + truncate(msg)
}
