// Package templates keeps stored templates (DESIGN §9): the records in the
// state store, the files in the blob store under blob.TemplateFiles, like
// package files keeps hosted PDFs.
//
// A template is one account's, found by its random ID or by its name. Each
// upload of a name adds a version; a version never changes once a record
// names it: its number is claimed once (a counter, so concurrent uploads of
// one name never share a number), its files are copied under the version's
// own prefix, and only then does a compare-and-set of the record
// (state.Store.Swap) name it, so no upload loses another's version.
//
// Deleting a template (or dropping its oldest version past MaxVersions)
// removes it from the record at once: from then on it is not found. Its
// blobs stay for the store's grace, the longest a render already queued
// may still read them, and are then removed by the sweeper (RunSweeper).
package templates

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/state"
)

// Version is one stored version of a template. Its files are at
// blob.TemplateFiles(template ID, Version) + each of Files, its sample
// data (when HasSample) at blob.TemplateSample.
type Version struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// Size is the bytes of its files.
	Size int64 `json:"size"`
	// Entry is the HTML rendered, one of Files (index.html, else the first
	// .html file, as generate decides).
	Entry string   `json:"entry"`
	Files []string `json:"files"`
	// Lang is the entry's <html lang>, "" when it has none (the locale of
	// the helpers when the data gives no _locale).
	Lang      string `json:"lang,omitempty"`
	HasSample bool   `json:"hasSample,omitempty"`
}

// Template is a stored template's record: its versions oldest first.
type Template struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Versions  []Version `json:"versions"`
}

// Latest is the newest version's number (0 for none).
func (t *Template) Latest() int {
	if len(t.Versions) == 0 {
		return 0
	}
	return t.Versions[len(t.Versions)-1].Version
}

// ErrNotFound is an unknown, deleted or malformed template ID or name, and
// another account's template: templates are private to their account, and
// whether another account has one is not told.
var ErrNotFound = errors.New("templates: not found")

// LimitError refuses a new template name: the account keeps Limit
// templates already (DOCRENDER_PLAN_<PLAN>_TEMPLATES). A new version of a
// stored template always fits.
type LimitError struct{ Limit int64 }

func (e *LimitError) Error() string {
	return fmt.Sprintf("templates: limit of %d templates reached", e.Limit)
}

// MaxVersions is how many versions of a template are kept: the upload of
// one more drops the oldest (its blobs go after the grace, like a deleted
// template's), so an upload never fails for having too many versions.
const MaxVersions = 50

// MaxNameLen bounds a template's name, in characters.
const MaxNameLen = 100

// Store is the template store.
type Store struct {
	st    state.Store
	blobs blob.Store
	// grace is how long a deleted template's (or dropped version's) blobs
	// are kept: renders queued before the delete may still read them.
	grace       time.Duration
	now         func() time.Time
	maxVersions int
}

// New returns the template store over the state and blob stores. grace is
// how long the blobs of a deleted template or dropped version stay for
// renders already queued: the longest a job may live.
func New(st state.Store, blobs blob.Store, grace time.Duration) *Store {
	return &Store{st: st, blobs: blobs, grace: grace, now: time.Now, maxVersions: MaxVersions}
}

func recordKey(id string) string        { return "tpl:" + id }
func versionKey(id string) string       { return "tpl:" + id + ":next" }
func nameKey(owner, name string) string { return "tplname:" + owner + ":" + name }
func listIndex(owner string) string     { return "tpllist:" + owner }

// goneIndex holds blob prefixes to delete, scored by when (unix ms).
const goneIndex = "templates:gone"

// deadAfter is when a listed ID without a version counts as the leftover of
// an upload whose gateway died, and gives its slot back: far above any
// upload's time.
const deadAfter = time.Hour

func ms(t time.Time) float64 { return float64(t.UnixMilli()) }

// CleanName is a template's name as stored: trimmed, 1 to MaxNameLen
// printable characters.
func CleanName(name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case n == "":
		return "", invalid.Field("name", "required: the template's name").
			WithHint("Send the name as a form field, e.g. curl -F name=invoice.")
	case !utf8.ValidString(n):
		return "", invalid.Field("name", "must be UTF-8")
	case utf8.RuneCountInString(n) > MaxNameLen:
		return "", invalid.Field("name", fmt.Sprintf("at most %d characters", MaxNameLen))
	}
	for _, r := range n {
		if !unicode.IsPrint(r) {
			return "", invalid.Field("name", fmt.Sprintf("only printable characters (%U is not)", r))
		}
	}
	return n, nil
}

// File is one uploaded file of a version to store.
type File struct {
	Name string
	Size int64
}

// Upload is a version to store: its files already sit in the blob store,
// each at From + its name (a request's temporary folder), checked.
type Upload struct {
	Owner string
	Name  string
	// Limit is the owner's plan's template count: a new name past it is a
	// *LimitError.
	Limit int64
	From  string
	Files []File
	Entry string
	Lang  string
	// Sample is the sampleData JSON; nil: none.
	Sample []byte
}

// Put stores up as a new version of the owner's template of that name (a
// new template when there is none) and returns the template and the
// version.
func (s *Store) Put(ctx context.Context, up Upload) (*Template, Version, error) {
	name, err := CleanName(up.Name)
	if err != nil {
		return nil, Version{}, err
	}
	// A template deleted while this upload ran loses it; the upload then
	// makes the name anew, a few times at most.
	for range 5 {
		id, err := s.claimName(ctx, up.Owner, name, up.Limit)
		if err != nil {
			return nil, Version{}, err
		}
		n, err := s.st.IncrBy(ctx, versionKey(id), 1, 0)
		if err != nil {
			return nil, Version{}, fmt.Errorf("templates: claim version: %w", err)
		}
		v := Version{Version: int(n), CreatedAt: s.now().UTC(), Entry: up.Entry, Lang: up.Lang, HasSample: up.Sample != nil}
		if err := s.copyFiles(ctx, up, id, &v); err != nil {
			s.discard(id, v.Version)
			return nil, Version{}, err
		}
		t, err := s.addVersion(ctx, up.Owner, id, v)
		if errors.Is(err, errGone) {
			s.discard(id, v.Version)
			_ = s.st.Delete(ctx, versionKey(id))
			continue
		}
		if err != nil {
			s.discard(id, v.Version)
			return nil, Version{}, err
		}
		return t, v, nil
	}
	return nil, Version{}, errors.New("templates: put: the template was deleted under every try")
}

// errGone: the record went (deleted) while an upload ran.
var errGone = errors.New("templates: record gone")

// discard deletes the blobs of a version no record names.
func (s *Store) discard(id string, v int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.blobs.DeletePrefix(ctx, blob.TemplateVersion(id, v))
}

// claimName returns the ID of the owner's template called name, making a
// record (without versions, so not yet found) when there is none, within
// the owner's limit.
func (s *Store) claimName(ctx context.Context, owner, name string, limit int64) (string, error) {
	reaped := false
	for range 10 {
		b, err := s.st.Get(ctx, nameKey(owner, name))
		switch {
		case err == nil:
			id := string(b)
			_, err := s.st.Get(ctx, recordKey(id))
			if err == nil {
				return id, nil
			}
			if !errors.Is(err, state.ErrNotFound) {
				return "", fmt.Errorf("templates: %w", err)
			}
			// The name of a template being deleted: drop the stale pointer.
			if _, err := s.st.Swap(ctx, nameKey(owner, name), b, nil, 0); err != nil {
				return "", fmt.Errorf("templates: %w", err)
			}
			continue
		case !errors.Is(err, state.ErrNotFound):
			return "", fmt.Errorf("templates: %w", err)
		}
		id := ids.New()
		now := s.now().UTC()
		ok, err := s.st.IndexAddIfBelow(ctx, listIndex(owner), id, ms(now), state.MinScore, limit)
		if err != nil {
			return "", fmt.Errorf("templates: reserve: %w", err)
		}
		if !ok {
			if !reaped {
				reaped = true
				if n, err := s.reapDead(ctx, owner); err == nil && n > 0 {
					continue
				}
			}
			return "", &LimitError{Limit: limit}
		}
		rec, err := json.Marshal(&Template{ID: id, Name: name, Owner: owner, CreatedAt: now, UpdatedAt: now, Versions: []Version{}})
		if err != nil {
			return "", err
		}
		if _, err := s.st.SetNX(ctx, recordKey(id), rec, 0); err != nil {
			_, _ = s.st.IndexRemove(ctx, listIndex(owner), id)
			return "", fmt.Errorf("templates: create: %w", err)
		}
		won, err := s.st.SetNX(ctx, nameKey(owner, name), []byte(id), 0)
		if err != nil || !won {
			// Another upload of the name made it first: use theirs.
			_ = s.st.Delete(ctx, recordKey(id))
			_, _ = s.st.IndexRemove(ctx, listIndex(owner), id)
			if err != nil {
				return "", fmt.Errorf("templates: create: %w", err)
			}
		} else {
			return id, nil
		}
	}
	return "", errors.New("templates: the name kept changing under this upload")
}

// copyFiles copies the upload's files (and sample) under the version's
// prefix, which no record names yet, and sums their size into v.
func (s *Store) copyFiles(ctx context.Context, up Upload, id string, v *Version) error {
	dst := blob.TemplateFiles(id, v.Version)
	v.Files = make([]string, 0, len(up.Files))
	for _, f := range up.Files {
		if err := s.copyBlob(ctx, up.From+f.Name, dst+f.Name); err != nil {
			return err
		}
		v.Files = append(v.Files, f.Name)
		v.Size += f.Size
	}
	if up.Sample != nil {
		if err := s.blobs.Put(ctx, blob.TemplateSample(id, v.Version), bytes.NewReader(up.Sample), int64(len(up.Sample))); err != nil {
			return fmt.Errorf("templates: store sample data: %w", err)
		}
	}
	return nil
}

func (s *Store) copyBlob(ctx context.Context, from, to string) error {
	rc, info, err := s.blobs.Get(ctx, from)
	if err != nil {
		return fmt.Errorf("templates: read upload: %w", err)
	}
	defer rc.Close()
	if err := s.blobs.Put(ctx, to, rc, info.Size); err != nil {
		return fmt.Errorf("templates: store file: %w", err)
	}
	return nil
}

// addVersion names v in the template's record, by compare-and-set: a
// concurrent upload's version is never overwritten. Past maxVersions the
// oldest are dropped, their blobs scheduled for deletion.
func (s *Store) addVersion(ctx context.Context, owner, id string, v Version) (*Template, error) {
	for {
		old, err := s.st.Get(ctx, recordKey(id))
		if errors.Is(err, state.ErrNotFound) {
			return nil, errGone
		}
		if err != nil {
			return nil, fmt.Errorf("templates: add version: %w", err)
		}
		var t Template
		if err := json.Unmarshal(old, &t); err != nil {
			return nil, fmt.Errorf("templates: add version: %w", err)
		}
		if t.Owner != owner {
			return nil, errGone
		}
		i, _ := slices.BinarySearchFunc(t.Versions, v.Version, func(a Version, n int) int { return cmp.Compare(a.Version, n) })
		t.Versions = slices.Insert(t.Versions, i, v)
		var dropped []int
		for len(t.Versions) > s.maxVersions {
			dropped = append(dropped, t.Versions[0].Version)
			t.Versions = t.Versions[1:]
		}
		if v.CreatedAt.After(t.UpdatedAt) {
			t.UpdatedAt = v.CreatedAt
		}
		b, err := json.Marshal(&t)
		if err != nil {
			return nil, err
		}
		ok, err := s.st.Swap(ctx, recordKey(id), old, b, 0)
		if err != nil {
			return nil, fmt.Errorf("templates: add version: %w", err)
		}
		if !ok {
			continue // another upload or a delete came first: read again
		}
		for _, d := range dropped {
			if err := s.scheduleDelete(ctx, blob.TemplateVersion(id, d)); err != nil {
				return nil, err
			}
		}
		return &t, nil
	}
}

// scheduleDelete has the sweeper delete the blobs under prefix once the
// grace has passed.
func (s *Store) scheduleDelete(ctx context.Context, prefix string) error {
	if err := s.st.IndexAdd(ctx, goneIndex, prefix, ms(s.now().Add(s.grace))); err != nil {
		return fmt.Errorf("templates: schedule blob deletion: %w", err)
	}
	return nil
}

// record reads a template's record; nil when there is none.
func (s *Store) record(ctx context.Context, id string) (*Template, error) {
	b, err := s.st.Get(ctx, recordKey(id))
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("templates: get: %w", err)
	}
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("templates: get: %w", err)
	}
	return &t, nil
}

// Get returns the owner's template of that ID; ErrNotFound for an unknown
// ID or another account's template.
func (s *Store) Get(ctx context.Context, owner, id string) (*Template, error) {
	if !ids.Valid(id) {
		return nil, ErrNotFound
	}
	t, err := s.record(ctx, id)
	if err != nil {
		return nil, err
	}
	if t == nil || t.Owner != owner || len(t.Versions) == 0 {
		return nil, ErrNotFound
	}
	return t, nil
}

// ByName returns the owner's template of that name (trimmed as stored).
func (s *Store) ByName(ctx context.Context, owner, name string) (*Template, error) {
	name, err := CleanName(name)
	if err != nil {
		return nil, ErrNotFound
	}
	b, err := s.st.Get(ctx, nameKey(owner, name))
	if errors.Is(err, state.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("templates: by name: %w", err)
	}
	return s.Get(ctx, owner, string(b))
}

// Version returns version v of t (0: the latest) and whether t has it.
func (s *Store) Version(t *Template, v int) (Version, bool) {
	if len(t.Versions) == 0 || v < 0 {
		return Version{}, false
	}
	if v == 0 {
		return t.Versions[len(t.Versions)-1], true
	}
	i, ok := slices.BinarySearchFunc(t.Versions, v, func(a Version, n int) int { return cmp.Compare(a.Version, n) })
	if !ok {
		return Version{}, false
	}
	return t.Versions[i], true
}

// Sample opens a version's sample data; ErrNotFound when it has none.
func (s *Store) Sample(ctx context.Context, t *Template, v Version) (io.ReadCloser, error) {
	if !v.HasSample {
		return nil, ErrNotFound
	}
	rc, _, err := s.blobs.Get(ctx, blob.TemplateSample(t.ID, v.Version))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("templates: sample: %w", err)
	}
	return rc, nil
}

// Count is how many templates the owner keeps (what the plan's limit counts).
func (s *Store) Count(ctx context.Context, owner string) (int64, error) {
	n, err := s.st.IndexCount(ctx, listIndex(owner), state.MinScore, state.MaxScore)
	if err != nil {
		return 0, fmt.Errorf("templates: count: %w", err)
	}
	return n, nil
}

// List returns a page of the owner's templates, newest first, and how many
// the owner keeps.
func (s *Store) List(ctx context.Context, owner string, page, limit int) ([]*Template, int64, error) {
	total, err := s.Count(ctx, owner)
	if err != nil {
		return nil, 0, err
	}
	out, err := state.Page(ctx, s.st, listIndex(owner), page, limit, func(id string) (*Template, bool, error) {
		t, err := s.Get(ctx, owner, id)
		if errors.Is(err, ErrNotFound) {
			return nil, false, nil // an upload still making its first version
		}
		return t, err == nil, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("templates: list: %w", err)
	}
	return out, total, nil
}

// Delete removes the owner's template: all its versions are not found from
// now on, its name and its slot of the plan's limit are free at once. Its
// blobs stay for the grace (renders already queued finish) and are then
// deleted by the sweeper.
func (s *Store) Delete(ctx context.Context, owner, id string) error {
	t, err := s.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	return s.remove(ctx, t)
}

// remove deletes t's record, name and slot and schedules its blobs.
// Scheduled first: a failure after it leaves nothing stored for good.
func (s *Store) remove(ctx context.Context, t *Template) error {
	if err := s.scheduleDelete(ctx, blob.TemplateDir(t.ID)); err != nil {
		return err
	}
	if err := s.st.Delete(ctx, recordKey(t.ID), versionKey(t.ID)); err != nil {
		return fmt.Errorf("templates: delete: %w", err)
	}
	if _, err := s.st.Swap(ctx, nameKey(t.Owner, t.Name), []byte(t.ID), nil, 0); err != nil {
		return fmt.Errorf("templates: delete: %w", err)
	}
	if _, err := s.st.IndexRemove(ctx, listIndex(t.Owner), t.ID); err != nil {
		return fmt.Errorf("templates: delete: %w", err)
	}
	return nil
}

// reapDead gives back the slots of uploads that died before their first
// version (a gateway gone mid-upload), older than deadAfter, and says how
// many it freed.
func (s *Store) reapDead(ctx context.Context, owner string) (int, error) {
	members, err := s.st.IndexRange(ctx, listIndex(owner), state.MinScore, ms(s.now().Add(-deadAfter)), 0, -1, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range members {
		t, err := s.record(ctx, id)
		if err != nil {
			return n, err
		}
		if t != nil && len(t.Versions) > 0 {
			continue
		}
		if t == nil {
			t = &Template{ID: id, Owner: owner}
		}
		if err := s.remove(ctx, t); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Sweep deletes the blobs of templates and versions whose grace has
// passed, at most limit prefixes, and says how many. One that fails does
// not stop the others: the first error is returned after the rest were tried.
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	prefixes, err := s.st.IndexRange(ctx, goneIndex, state.MinScore, ms(s.now()), 0, limit, false)
	if err != nil {
		return 0, fmt.Errorf("templates: sweep: %w", err)
	}
	n := 0
	var first error
	for _, p := range prefixes {
		if !strings.HasPrefix(p, blob.TemplatesPrefix) {
			_, _ = s.st.IndexRemove(ctx, goneIndex, p) // never made here: not ours to delete
			continue
		}
		if err := s.blobs.DeletePrefix(ctx, p); err != nil {
			first = cmp.Or(first, fmt.Errorf("templates: sweep %s: %w", p, err))
			continue
		}
		if _, err := s.st.IndexRemove(ctx, goneIndex, p); err != nil {
			first = cmp.Or(first, fmt.Errorf("templates: sweep %s: %w", p, err))
			continue
		}
		n++
	}
	return n, first
}

// RunSweeper sweeps at once and then every interval until ctx ends.
func (s *Store) RunSweeper(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		const batch = 500
		for ctx.Err() == nil {
			n, err := s.Sweep(ctx, batch)
			if err != nil && onErr != nil && ctx.Err() == nil {
				onErr(err)
			}
			if n < batch || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
