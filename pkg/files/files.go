// Package files keeps the records of stored results: hosted PDFs and ZIPs,
// cached documents, batch ZIPs. Every stored file has one opaque ID
// (DESIGN §4.3) under which all read paths find it; the bytes live in the
// blob store under blob.FileKey(ID), the record in the state store.
package files

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/ids"
	"github.com/docrender/docrender/pkg/state"
)

// File is a stored file's record.
type File struct {
	ID string `json:"id"`
	// RecordID is the record's own identifier (spec 2.3 "id"), distinct from
	// the public file ID so the record can be referred to without granting
	// access to the bytes.
	RecordID    string    `json:"recordId"`
	OwnerID     string    `json:"ownerId"`
	Name        string    `json:"name"` // with extension, e.g. invoice.pdf
	ContentType string    `json:"contentType"`
	Size        int64     `json:"size"`
	UserType    string    `json:"userType"` // "guest" or "registered"
	Hosted      bool      `json:"hosted"`   // counts toward the hosted limit and is listed
	CreatedAt   time.Time `json:"createdAt"`
	ExpiresAt   time.Time `json:"expiresAt"`
	// DocumentID and InputHash are set for cached documents (DESIGN §4.1).
	DocumentID string `json:"documentId,omitempty"`
	InputHash  string `json:"inputHash,omitempty"`
}

// Public reports whether anyone with the ID may read the file.
func (f *File) Public() bool { return f.UserType != "registered" }

// Store is the file index.
type Store struct {
	st    state.Store
	blobs blob.Store
	now   func() time.Time
}

// New returns the file index over the state and blob stores.
func New(st state.Store, blobs blob.Store) *Store {
	return &Store{st: st, blobs: blobs, now: time.Now}
}

func recordKey(id string) string        { return "file:" + id }
func downloadsKey(id string) string     { return "downloads:" + id }
func hostedIndex(owner string) string   { return "hosted:" + owner }
func listIndex(owner string) string     { return "filelist:" + owner }
func cacheKey(owner, doc string) string { return "cache:" + owner + ":" + doc }

const expiryIndex = "files:expiry"

// recordGrace keeps a record a little past expiry so the sweeper finds it.
const recordGrace = 24 * time.Hour

// keepFor is how long a state entry about a file expiring at exp must live:
// past the expiry by the grace, and never zero or negative, which the stores
// read as "forever" (or "keep the old TTL" in go-redis).
func (s *Store) keepFor(exp time.Time) time.Duration {
	return max(exp.Sub(s.now())+recordGrace, time.Second)
}

func ms(t time.Time) float64 { return float64(t.UnixMilli()) }

// liveFloor is the lowest expiry score of a live file: one expiring exactly
// now is gone already, as Get says.
func (s *Store) liveFloor() float64 { return ms(s.now()) + 1 }

// Why a file cannot be had. The gateway answers each with its own status
// and words (gateway/server/errors.go).
var (
	// ErrNotFound: an unknown, expired, deleted or malformed ID.
	ErrNotFound = errors.New("files: not found")
	// ErrPrivate: a private file asked for without credentials.
	ErrPrivate = errors.New("files: private")
	// ErrForeign: a private file of another account.
	ErrForeign = errors.New("files: another account's")
)

// HostedLimitError is a hosted slot refused: the owner holds Limit live
// hosted files already.
type HostedLimitError struct{ Limit int64 }

func (e *HostedLimitError) Error() string {
	return fmt.Sprintf("files: hosted limit of %d reached", e.Limit)
}

// ReserveHosted takes one of the owner's hosted slots for id until the
// given time, atomically (never over limit, also across gateways). Put
// holds it until the file expires; release it if the file is never stored.
// A slot reserved by a request holds until shortly after the request's end,
// so a gateway that dies mid-request does not keep it.
func (s *Store) ReserveHosted(ctx context.Context, owner, id string, until time.Time, limit int64) error {
	ok, err := s.st.IndexAddIfBelow(ctx, hostedIndex(owner), id, ms(until), s.liveFloor(), limit)
	if err != nil {
		return fmt.Errorf("files: reserve hosted slot: %w", err)
	}
	if !ok {
		return &HostedLimitError{Limit: limit}
	}
	return nil
}

// ReleaseHosted frees a slot taken by ReserveHosted.
func (s *Store) ReleaseHosted(ctx context.Context, owner, id string) error {
	_, err := s.st.IndexRemove(ctx, hostedIndex(owner), id)
	return err
}

// HostedCount counts the owner's live hosted files.
func (s *Store) HostedCount(ctx context.Context, owner string) (int64, error) {
	return s.st.IndexCount(ctx, hostedIndex(owner), s.liveFloor(), state.MaxScore)
}

// Track puts id into the expiry index before its bytes are written, so bytes
// of a render whose answer never arrived (gateway gone, wait timed out) are
// still swept once exp passes.
func (s *Store) Track(ctx context.Context, id string, exp time.Time) error {
	if err := s.st.IndexAdd(ctx, expiryIndex, id, ms(exp)); err != nil {
		return fmt.Errorf("files: track: %w", err)
	}
	return nil
}

// Put records f, whose bytes are already at blob.FileKey(f.ID). A hosted file
// must hold a slot from ReserveHosted.
func (s *Store) Put(ctx context.Context, f *File) error {
	if f.RecordID == "" {
		f.RecordID = ids.New()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("files: put: %w", err)
	}
	if err := s.st.Set(ctx, recordKey(f.ID), b, s.keepFor(f.ExpiresAt)); err != nil {
		return fmt.Errorf("files: put: %w", err)
	}
	if err := s.st.IndexAdd(ctx, expiryIndex, f.ID, ms(f.ExpiresAt)); err != nil {
		return fmt.Errorf("files: put: %w", err)
	}
	if f.Hosted {
		if err := s.st.IndexAdd(ctx, hostedIndex(f.OwnerID), f.ID, ms(f.ExpiresAt)); err != nil {
			return fmt.Errorf("files: put: %w", err)
		}
		if err := s.st.IndexAdd(ctx, listIndex(f.OwnerID), f.ID, ms(f.CreatedAt)); err != nil {
			return fmt.Errorf("files: put: %w", err)
		}
	}
	return nil
}

// Get returns a live file; anything else is ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*File, error) {
	if !ids.Valid(id) {
		return nil, ErrNotFound
	}
	b, err := s.st.Get(ctx, recordKey(id))
	if errors.Is(err, state.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("files: get: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("files: get: %w", err)
	}
	if !s.now().Before(f.ExpiresAt) {
		return nil, ErrNotFound
	}
	return &f, nil
}

// Authorize checks that viewer (empty: anonymous) may read f (DESIGN §4.4).
func Authorize(f *File, viewer string) error {
	if f.Public() || viewer == f.OwnerID {
		return nil
	}
	if viewer == "" {
		return ErrPrivate
	}
	return ErrForeign
}

// CountDownload adds one to the file's download counter.
func (s *Store) CountDownload(ctx context.Context, f *File) (int64, error) {
	n, err := s.st.IncrBy(ctx, downloadsKey(f.ID), 1, s.keepFor(f.ExpiresAt))
	if err != nil {
		return 0, fmt.Errorf("files: count download: %w", err)
	}
	return n, nil
}

// Downloads is the file's download counter.
func (s *Store) Downloads(ctx context.Context, id string) (int64, error) {
	b, err := s.st.Get(ctx, downloadsKey(id))
	if errors.Is(err, state.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("files: downloads: %w", err)
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// Delete removes the file everywhere: record, indexes, counter, cache entry,
// bytes. The record goes first so every read path answers 404 at once; the
// expiry-index entry goes last, so bytes whose deletion failed are retried
// by the sweeper (which deletes bytes of IDs without a record).
func (s *Store) Delete(ctx context.Context, f *File) error {
	if err := s.st.Delete(ctx, recordKey(f.ID), downloadsKey(f.ID)); err != nil {
		return fmt.Errorf("files: delete: %w", err)
	}
	for _, idx := range []string{hostedIndex(f.OwnerID), listIndex(f.OwnerID)} {
		if _, err := s.st.IndexRemove(ctx, idx, f.ID); err != nil {
			return fmt.Errorf("files: delete: %w", err)
		}
	}
	if err := s.dropCache(ctx, f); err != nil {
		return err
	}
	if err := s.blobs.Delete(ctx, blob.FileKey(f.ID)); err != nil {
		return fmt.Errorf("files: delete: %w", err)
	}
	if _, err := s.st.IndexRemove(ctx, expiryIndex, f.ID); err != nil {
		return fmt.Errorf("files: delete: %w", err)
	}
	return nil
}

// dropCache removes f's cache entry, but only while it still points at f:
// when a document is regenerated the entry already names the new file, and
// deleting (or sweeping) the old one must not forget the new one.
func (s *Store) dropCache(ctx context.Context, f *File) error {
	if f.DocumentID == "" {
		return nil
	}
	c, err := s.cached(ctx, f.OwnerID, f.DocumentID)
	if err != nil || c == nil || c.FileID != f.ID {
		return err
	}
	if err := s.st.Delete(ctx, cacheKey(f.OwnerID, f.DocumentID)); err != nil {
		return fmt.Errorf("files: delete cache entry: %w", err)
	}
	return nil
}

// List returns a page of the owner's live hosted files, newest first, and
// the number of live hosted files.
func (s *Store) List(ctx context.Context, owner string, page, limit int) ([]*File, int64, error) {
	total, err := s.HostedCount(ctx, owner)
	if err != nil {
		return nil, 0, err
	}
	// Newest first, skipping records that expired but were not swept yet.
	out, err := state.Page(ctx, s.st, listIndex(owner), page, limit, func(id string) (*File, bool, error) {
		f, err := s.Get(ctx, id)
		return f, err == nil, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("files: list: %w", err)
	}
	return out, total, nil
}

// Stats sums the owner's live hosted files.
type Stats struct {
	TotalHosted    int64 `json:"totalHosted"`
	TotalDownloads int64 `json:"totalDownloads"`
	TotalSize      int64 `json:"totalSize"`
}

// Stats returns the owner's hosted-file statistics.
func (s *Store) Stats(ctx context.Context, owner string) (Stats, error) {
	var st Stats
	files, _, err := s.List(ctx, owner, 1, math.MaxInt32)
	if err != nil {
		return st, err
	}
	for _, f := range files {
		n, err := s.Downloads(ctx, f.ID)
		if err != nil {
			return st, err
		}
		st.TotalHosted++
		st.TotalDownloads += n
		st.TotalSize += f.Size
	}
	return st, nil
}

// Cached is the cache entry for a caller-chosen document ID.
type Cached struct {
	FileID    string `json:"fileId"`
	InputHash string `json:"inputHash"`
}

// cached reads the cache entry of owner's documentID; nil when absent or unreadable.
func (s *Store) cached(ctx context.Context, owner, documentID string) (*Cached, error) {
	b, err := s.st.Get(ctx, cacheKey(owner, documentID))
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: cache: %w", err)
	}
	var c Cached
	if json.Unmarshal(b, &c) != nil {
		return nil, nil
	}
	return &c, nil
}

// LookupCache returns the live file cached under owner and documentID whose
// inputs hash to inputHash, or nil.
func (s *Store) LookupCache(ctx context.Context, owner, documentID, inputHash string) (*File, error) {
	c, err := s.cached(ctx, owner, documentID)
	if err != nil || c == nil || c.InputHash != inputHash {
		return nil, err
	}
	return s.liveOrNil(ctx, c.FileID)
}

// PreviousCache returns the live file currently cached under documentID
// (whatever its inputs), or nil.
func (s *Store) PreviousCache(ctx context.Context, owner, documentID string) (*File, error) {
	c, err := s.cached(ctx, owner, documentID)
	if err != nil || c == nil {
		return nil, err
	}
	return s.liveOrNil(ctx, c.FileID)
}

// liveOrNil is Get with "gone" as nil rather than an error.
func (s *Store) liveOrNil(ctx context.Context, id string) (*File, error) {
	f, err := s.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return f, err
}

// SetCache points f's owner's f.DocumentID at f.
func (s *Store) SetCache(ctx context.Context, f *File) error {
	b, err := json.Marshal(Cached{FileID: f.ID, InputHash: f.InputHash})
	if err != nil {
		return fmt.Errorf("files: set cache: %w", err)
	}
	if err := s.st.Set(ctx, cacheKey(f.OwnerID, f.DocumentID), b, s.keepFor(f.ExpiresAt)); err != nil {
		return fmt.Errorf("files: set cache: %w", err)
	}
	return nil
}

// Sweep deletes every file that expired before now, at most max of them,
// and returns how many it deleted.
// One file that cannot be deleted does not stop the others: the first error
// is returned after the rest were tried.
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	ids, err := s.st.IndexRange(ctx, expiryIndex, state.MinScore, ms(s.now()), 0, limit, false)
	if err != nil {
		return 0, fmt.Errorf("files: sweep: %w", err)
	}
	n := 0
	var first error
	for _, id := range ids {
		if err := s.sweepOne(ctx, id); err != nil {
			first = cmp.Or(first, err)
			continue
		}
		n++
	}
	return n, first
}

// sweepOne deletes one expired file. Without a readable record (a render
// that was never recorded, a record past its grace) only the bytes and the
// index entry are left to delete.
func (s *Store) sweepOne(ctx context.Context, id string) error {
	b, err := s.st.Get(ctx, recordKey(id))
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("files: sweep %s: %w", id, err)
	}
	var f File
	if err == nil && json.Unmarshal(b, &f) == nil && f.ID == id {
		return s.Delete(ctx, &f)
	}
	if err := s.blobs.Delete(ctx, blob.FileKey(id)); err != nil {
		return fmt.Errorf("files: sweep %s: %w", id, err)
	}
	if err := s.st.Delete(ctx, recordKey(id), downloadsKey(id)); err != nil {
		return fmt.Errorf("files: sweep %s: %w", id, err)
	}
	if _, err := s.st.IndexRemove(ctx, expiryIndex, id); err != nil {
		return fmt.Errorf("files: sweep %s: %w", id, err)
	}
	return nil
}

// RunSweeper sweeps at once (files may have expired while no process ran)
// and then every interval until ctx ends.
func (s *Store) RunSweeper(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sweepAll(ctx, onErr)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepAll sweeps in rounds until a round finds less than a full batch.
func (s *Store) sweepAll(ctx context.Context, onErr func(error)) {
	const batch = 500
	for ctx.Err() == nil {
		n, err := s.Sweep(ctx, batch)
		if err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		if n < batch || err != nil {
			return
		}
	}
}
