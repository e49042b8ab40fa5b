// Package pdfcheck checks a PDF against the rules of PDF/A-2 and PDF/A-3
// (ISO 19005-2/-3, levels B and U) and PDF/UA-1 (ISO 14289-1) that the
// service's own steps can break: Chromium's (Skia's) output, pdfcpu's
// writes, merged input PDFs, a watermark stamp and a signature (DESIGN §8,
// docs/plans/issue-22.md §5). It is a port of a subset of veraPDF's
// validation profiles (veraPDF/veraPDF-validation-profiles, PDF_A/PDFA-2B.xml
// and siblings, PDF_UA/PDFUA-1.xml), and reports violations under veraPDF's
// rule IDs ("6.2.11.4.1-1", "UA 7.1-9"), so that a report can be compared
// with veraPDF's. docs/decisions.md ("What our PDF/A and PDF/UA checker
// covers") lists the rules covered and those that are not.
//
// The checker reads untrusted files: it never panics, every walk has a
// visited set and a depth bound, and content streams are scanned under a
// byte and operator budget. Work it could not finish is itself reported
// (rule RuleLimit), never silently passed.
package pdfcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Level is what a document claims to conform to.
type Level struct {
	// PDFA is "" (no PDF/A), "2b", "2u", "3b" or "3u".
	PDFA string
	// PDFUA asks for PDF/UA-1.
	PDFUA bool
}

// Violation is one broken rule.
type Violation struct {
	// Rule is veraPDF's rule ID: "6.2.11.4.1-1" for PDF/A (clause and test
	// number), "UA 7.1-9" for PDF/UA-1. PDF/A-1's Info↔XMP rules are
	// reported under their PDF/A-1 IDs "6.7.3-1"…"6.7.3-8". Two IDs are the
	// checker's own: RuleLimit and RuleMore.
	Rule string
	// Clause is the clause of the standard: "ISO 19005-2 6.2.11.4.1",
	// "ISO 14289-1 7.1".
	Clause string
	// Object names what breaks the rule: "catalog", "page 3 font F1",
	// "XMP metadata", "file".
	Object string
	// Message says what is wrong, in words.
	Message string
}

// String is "6.2.11.4.1-1: font F1 on page 3 is not embedded" style: the
// rule, then the object and the message.
func (v Violation) String() string {
	if v.Object == "" {
		return v.Rule + ": " + v.Message
	}
	return v.Rule + ": " + v.Object + ": " + v.Message
}

const (
	// RuleLimit reports work the checker did not do because the file
	// exceeded one of its bounds (a content stream too large, too many
	// operators, nesting too deep): the document is not known to conform.
	RuleLimit = "limit"
	// RuleMore is the last violation when more were found than returned:
	// its message counts the rest.
	RuleMore = "more"
)

// Bounds.
const (
	// MaxViolations is how many violations Check returns at most (then one
	// RuleMore counting the rest).
	MaxViolations = 100
	// maxPerRule is how many violations of one rule are listed; the rest
	// are counted in RuleMore.
	maxPerRule = 10
	// maxDepth bounds recursion into nested objects, forms and trees.
	maxDepth = 64
	// maxStreamBytes bounds one decoded stream (content, XMP, CMap, font).
	maxStreamBytes = 64 << 20
	// maxContentBytes bounds all content bytes scanned in one check.
	maxContentBytes = 256 << 20
	// maxOps bounds the content operators scanned in one check.
	maxOps = 20_000_000
	// maxXMPBytes bounds the XMP packet parsed.
	maxXMPBytes = 4 << 20
	// maxTreeNodes bounds the structure tree, parent tree and page tree
	// nodes visited.
	maxTreeNodes = 2_000_000
)

// ErrUnreadable is returned (wrapped) when the bytes are not a PDF that
// can be read at all.
var ErrUnreadable = errors.New("pdfcheck: unreadable PDF")

// Check reads pdf (relaxed, offline, as the worker's pdfedit reads) and
// checks it at lvl: the byte-level rules on pdf itself (header and binary
// comment, trailer ID, no Encrypt, nothing after %%EOF, stream keywords,
// signature byte ranges), everything else on the parsed model. It returns
// every violation found, at most MaxViolations (then RuleMore), in a
// stable order. The error is non-nil only when pdf cannot be read; the
// violations found in its bytes are returned with it.
func Check(pdf []byte, lvl Level) ([]Violation, error) {
	if err := lvl.valid(); err != nil {
		return nil, err
	}
	xctx, err := read(pdf)
	if err != nil {
		c := newChecker(nil, pdf, lvl)
		c.safely(c.checkBytes)
		return c.result(), err
	}
	return run(xctx, pdf, lvl, true)
}

// CheckContext is Check on a model already read (the post-processing
// pipeline holds one). pdf, when not nil, is the file for the byte-level
// rules; the stream-keyword rules (6.1.7.1-1/2) use the model's stream
// offsets, so they run only when xctx was read from pdf (same size). With
// pdf nil, the byte-level rules are skipped (the pipeline runs them on its
// output with Check). CheckContext does not modify xctx.
func CheckContext(xctx *model.Context, pdf []byte, lvl Level) ([]Violation, error) {
	if err := lvl.valid(); err != nil {
		return nil, err
	}
	if xctx == nil || xctx.XRefTable == nil {
		return nil, errors.New("pdfcheck: no PDF model")
	}
	sameFile := pdf != nil && xctx.Read != nil && xctx.Read.FileSize == int64(len(pdf))
	return run(xctx, pdf, lvl, sameFile)
}

func run(xctx *model.Context, pdf []byte, lvl Level, sameFile bool) ([]Violation, error) {
	c := newChecker(xctx.XRefTable, pdf, lvl)
	c.sameFile = sameFile
	if pdf != nil {
		c.safely(c.checkBytes)
	}
	c.safely(c.checkModel)
	return c.result(), nil
}

func (l Level) valid() error {
	switch l.PDFA {
	case "", "2b", "2u", "3b", "3u":
		return nil
	}
	return fmt.Errorf("pdfcheck: unknown PDF/A level %q", l.PDFA)
}

var (
	confOnce sync.Once
	baseConf model.Configuration
)

// conf is worker/pdfedit's reading configuration: relaxed validation,
// offline, no pdfcpu config directory.
func conf() *model.Configuration {
	confOnce.Do(func() {
		if model.ConfigPath == "default" {
			api.DisableConfigDir()
		}
		baseConf = *model.NewDefaultConfiguration()
	})
	c := baseConf
	c.AllowedRevocationHosts = nil
	c.Cmd = model.LISTINFO
	c.ValidationMode = model.ValidationRelaxed
	c.ValidateLinks = false
	c.Offline = true
	c.UserPW, c.OwnerPW = "", ""
	c.PostProcessValidate = false
	return &c
}

// read parses pdf into a pdfcpu model, recovering pdfcpu's panics.
func read(pdf []byte) (xctx *model.Context, err error) {
	if !bytes.Contains(pdf[:min(len(pdf), 1024)], []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: no PDF header", ErrUnreadable)
	}
	defer func() {
		if r := recover(); r != nil {
			xctx, err = nil, fmt.Errorf("%w: %v", ErrUnreadable, r)
		}
	}()
	xctx, err = pdfcpu.ReadWithContext(context.Background(), bytes.NewReader(pdf), conf())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if xctx == nil || xctx.XRefTable == nil || xctx.RootDict == nil && xctx.Root == nil {
		return nil, fmt.Errorf("%w: no catalog", ErrUnreadable)
	}
	return xctx, nil
}

// checker holds one check's state.
type checker struct {
	x        *model.XRefTable
	pdf      []byte
	lvl      Level
	part     int    // PDF/A part: 0 (none), 2 or 3
	conf     string // PDF/A conformance: "B" or "U"
	sameFile bool   // x was read from pdf: stream offsets point into it

	out     []Violation
	perRule map[string]int
	more    int
	seen    map[string]bool // rule+object already reported

	contentBytes int
	ops          int
	limitHit     map[string]bool

	catalog types.Dict
	pages   []page
	xmp     *xmpInfo // nil: none or unreadable
	outCS   string   // colour space of the PDF/A output intent's profile ("RGB ", …), "" without one
	af      map[int]bool
	res     *resourceWalk
	ua      uaState
	hasText bool // some page paints text
}

func newChecker(x *model.XRefTable, pdf []byte, lvl Level) *checker {
	c := &checker{x: x, pdf: pdf, lvl: lvl, perRule: map[string]int{}, seen: map[string]bool{},
		limitHit: map[string]bool{}, af: map[int]bool{}}
	if lvl.PDFA != "" {
		c.part = int(lvl.PDFA[0] - '0')
		c.conf = strings.ToUpper(lvl.PDFA[1:])
	}
	return c
}

func (c *checker) pdfa() bool { return c.part != 0 }
func (c *checker) u() bool    { return c.conf == "U" }

// report records a violation of a PDF/A rule ("6.1.3-1") or a PDF/UA rule
// ("UA 7.1-9"); the clause is derived from the ID.
func (c *checker) report(rule, object, format string, args ...any) {
	key := rule + "\x00" + object
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	if c.perRule[rule] >= maxPerRule || len(c.out) >= MaxViolations {
		c.more++
		return
	}
	c.perRule[rule]++
	c.out = append(c.out, Violation{Rule: rule, Clause: c.clause(rule), Object: object, Message: fmt.Sprintf(format, args...)})
}

// limit reports a bound that stopped the check, once per kind.
func (c *checker) limit(kind, object, format string, args ...any) {
	if c.limitHit[kind] {
		return
	}
	c.limitHit[kind] = true
	c.report(RuleLimit, object, format, args...)
}

func (c *checker) clause(rule string) string {
	switch {
	case rule == RuleLimit || rule == RuleMore:
		return ""
	case strings.HasPrefix(rule, "UA "):
		cl, _, _ := strings.Cut(strings.TrimPrefix(rule, "UA "), "-")
		return "ISO 14289-1 " + cl
	case strings.HasPrefix(rule, "6.7.3-"):
		return "ISO 19005-1 6.7.3"
	}
	cl, _, _ := strings.Cut(rule, "-")
	std := "ISO 19005-2 "
	if c.part == 3 {
		std = "ISO 19005-3 "
	}
	return std + cl
}

// safely runs f, turning a panic on a malformed model into a RuleLimit
// violation: the part of the check f did not finish is unknown.
func (c *checker) safely(f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.report(RuleLimit, "file", "the checker stopped on a malformed object (%v); the rest is not checked", r)
		}
	}()
	f()
}

// result is the violations in a stable order (by rule, then object), with
// RuleMore last when some were left out.
func (c *checker) result() []Violation {
	out := c.out
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return ruleLess(out[i].Rule, out[j].Rule)
		}
		return out[i].Object < out[j].Object
	})
	if c.more > 0 {
		out = append(out, Violation{Rule: RuleMore, Message: fmt.Sprintf("%d more violations not listed", c.more)})
	}
	return out
}

// ruleLess orders rule IDs numerically clause by clause ("6.2.9-1" before
// "6.2.10-1"), PDF/A before PDF/UA, the checker's own last.
func ruleLess(a, b string) bool {
	ka, kb := ruleKey(a), ruleKey(b)
	for i := 0; i < len(ka) && i < len(kb); i++ {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return len(ka) < len(kb)
}

func ruleKey(r string) []int {
	var k []int
	switch {
	case r == RuleLimit:
		return []int{1 << 20}
	case r == RuleMore:
		return []int{1 << 21}
	case strings.HasPrefix(r, "UA "):
		k = append(k, 1000)
		r = r[3:]
	}
	n, in := 0, false
	for i := 0; i < len(r); i++ {
		if ch := r[i]; ch >= '0' && ch <= '9' {
			n, in = n*10+int(ch-'0'), true
		} else if in {
			k, n, in = append(k, n), 0, false
		}
	}
	if in {
		k = append(k, n)
	}
	return k
}
