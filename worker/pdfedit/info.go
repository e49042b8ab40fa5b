package pdfedit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/docrender/docrender/proto/jobspb"
)

// KeywordSeparator joins DESIGN §6's keywords into the one text string of
// the Info dictionary's /Keywords, which readers show as written.
const KeywordSeparator = ", "

// SetInfo writes in to w with the document information of info (DESIGN §6
// metadata) in its Info dictionary: Title, Author, Subject, Keywords (joined
// by KeywordSeparator) and Creator. Fields left empty keep what the document
// has (Chromium writes the <title> as Title and itself as Creator); when info
// is nil or sets nothing, in is copied to w unchanged.
//
// The strings are written as UTF-16 text strings, so any language survives.
// A PDF pdfcpu cannot read or write gives a *BadInputError (with an empty
// Name; a defect found only while writing may leave partial output in w);
// cancelling ctx returns ctx's error.
func SetInfo(ctx context.Context, in io.ReadSeeker, w io.Writer, info *jobspb.DocInfo) error {
	if w == nil {
		return errors.New("pdfedit: set info: nil writer")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	entries := infoEntries(info)
	if len(entries) == 0 {
		return copyInput(ctx, in, w)
	}
	return rewrite(ctx, in, w, newConf(model.ADDPROPERTIES), func(pc *model.Context) error {
		return setInfo(pc, entries)
	})
}

// infoEntries maps the fields info sets to Info dictionary keys.
func infoEntries(info *jobspb.DocInfo) map[string]string {
	var keywords []string
	for _, k := range info.GetKeywords() {
		if k = strings.TrimSpace(k); k != "" {
			keywords = append(keywords, k)
		}
	}
	entries := map[string]string{}
	for key, v := range map[string]string{
		"Title":    info.GetTitle(),
		"Author":   info.GetAuthor(),
		"Subject":  info.GetSubject(),
		"Keywords": strings.Join(keywords, KeywordSeparator),
		"Creator":  info.GetCreator(),
	} {
		if v = strings.TrimSpace(v); v != "" {
			entries[key] = v
		}
	}
	return entries
}

// setInfo writes entries into pc's Info dictionary, creating it if need be.
func setInfo(pc *model.Context, entries map[string]string) error {
	d, err := infoDict(pc)
	if err != nil {
		return err
	}
	for key, v := range entries {
		// Job strings are protobuf strings, valid UTF-8 already; a stray
		// byte must not fail the document, only show as U+FFFD.
		s, err := types.EscapedUTF16String(strings.ToValidUTF8(v, "\uFFFD"))
		if err != nil {
			return fmt.Errorf("pdfedit: info %s: %w", key, err)
		}
		d[key] = types.StringLiteral(*s)
	}
	return nil
}

// infoDict returns pc's Info dictionary; a document without one (or whose
// reference leads nowhere usable) gets a new one.
func infoDict(pc *model.Context) (types.Dict, error) {
	if pc.Info != nil {
		if d, err := pc.DereferenceDict(*pc.Info); err == nil && d != nil {
			return d, nil
		}
	}
	d := types.NewDict()
	ref, err := pc.IndRefForNewObject(d)
	if err != nil {
		return nil, fmt.Errorf("pdfedit: new Info dictionary: %w", err)
	}
	pc.Info = ref
	return d, nil
}

// rewrite reads in under conf, applies edit and writes the result to w: the
// path of the edits made to a document as a whole. A pdfcpu failure or panic
// on the document is a *BadInputError; cancelling ctx returns ctx's error.
func rewrite(ctx context.Context, in io.ReadSeeker, w io.Writer, conf *model.Configuration, edit func(*model.Context) error) error {
	pc, err := readPDF(ctx, "", in, conf)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := safeEdit(pc, edit); err != nil {
		return err
	}
	return save(ctx, pc, w)
}

// safeEdit runs edit, turning a pdfcpu panic on the document into a
// *BadInputError like the failures of reading and writing it.
func safeEdit(pc *model.Context, edit func(*model.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &BadInputError{Reason: fmt.Sprintf("cannot edit this PDF (%v)", r)}
		}
	}()
	return edit(pc)
}
