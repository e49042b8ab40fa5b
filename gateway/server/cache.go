package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/files"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// Response headers of stored generate results.
const (
	// headerCache is HIT or MISS when a caching ID was given (DESIGN §4.1).
	headerCache = "X-Cache"
	// headerPdfID names the stored file a binary answer came from, so a
	// cached document can be opened later under /pdf/view/<id> and friends.
	headerPdfID = "X-PDF-ID"
)

// inputHashVersion changes whenever what goes into the hash changes, so old
// entries miss instead of matching on a different recipe.
const inputHashVersion = "v2"

// inputHash is the cache key of a generate request (DESIGN §4.1): every
// uploaded file's name and bytes, the entry file, and the normalised options.
// Besides what shapes the PDF (page, watermark, the print options of DESIGN
// §6), the hash covers what shapes
// the stored answer (fileName, userType, host): a hit must return a file
// whose name, access and hosting are what this request asked for.
// regenerate and the caching ID itself are not inputs.
func inputHash(up *upload, entry string, opts pdfopts.Options) string {
	fs := append([]uploadedFile(nil), up.files...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	type fileSum struct {
		Name   string `json:"n"`
		SHA256 string `json:"h"`
	}
	in := struct {
		Version   string            `json:"v"`
		Files     []fileSum         `json:"files"`
		Entry     string            `json:"entry"`
		FileName  string            `json:"fileName"`
		Page      *jobspb.Page      `json:"page"`
		Watermark *jobspb.Watermark `json:"watermark"`
		UserType  string            `json:"userType"`
		Host      bool              `json:"host"`
		// DESIGN §6: how it is printed, checked, described and locked.
		Print      *jobspb.Print      `json:"print"`
		Info       *jobspb.DocInfo    `json:"info"`
		Encryption *jobspb.Encryption `json:"encryption"`
		Fetch      *jobspb.PageURL    `json:"fetch"`
		// URL is the page rendered instead of files.
		URL string `json:"url,omitempty"`
		// DESIGN §8, attachments by their bytes' SHA-256.
		Record *jobspb.Record `json:"record,omitempty"`
		// DESIGN §11: the steps' order and the pages step.
		Stages []string          `json:"stages,omitempty"`
		Pages  *jobspb.PagesTool `json:"pages,omitempty"`
	}{inputHashVersion, nil, entry, opts.FileName, opts.Page, opts.Watermark, opts.UserType, opts.Host,
		opts.Print, opts.Info, opts.Encryption, opts.Fetch, up.url, recordDigest(opts.Record, up.record), stagesKey(opts.Stages, opts.StepsOrdered), opts.Pages}
	for _, f := range fs {
		in.Files = append(in.Files, fileSum{f.Name, hex.EncodeToString(f.SHA256)})
	}
	// encoding/json writes struct fields in declaration order: deterministic.
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// storedGenerate is how a generate request keeps its result.
type storedGenerate struct {
	pending *PendingFile
	host    bool
	cache   string // X-Cache value; empty without a caching ID
}

// prepareGenerate handles host and caching IDs before rendering. It returns
// nil when the answer is the plain temporary PDF. A cache hit is answered
// here (done true): no render, no conversion counted. Otherwise the stored
// file is reserved (with its hosted slot) for the job to write to.
func (s *Server) prepareGenerate(c echo.Context, u *account.User, up *upload, entry string, opts pdfopts.Options) (sg *storedGenerate, done bool, err error) {
	ctx := c.Request().Context()
	spec := StoreSpec{Name: opts.FileName + ".pdf", ContentType: "application/pdf", UserType: opts.UserType, Hosted: opts.Host}
	if opts.DocumentID == "" && !opts.Host {
		if idemOf(c) == nil {
			return nil, false, nil
		}
		// A keyed answer's bytes are kept for a retry (DESIGN §4.20).
		spec = keptFile(spec)
	}
	sg = &storedGenerate{host: opts.Host}
	if opts.DocumentID != "" {
		spec.DocumentID, spec.InputHash = opts.DocumentID, inputHash(up, entry, opts)
		if !opts.Regenerate {
			f, err := s.files.LookupCache(ctx, u.ID, spec.DocumentID, spec.InputHash)
			if err != nil {
				return nil, false, err
			}
			if f != nil {
				logger(c).Info("cache hit", "document_id", spec.DocumentID, "file", f.ID)
				sg.cache = "HIT"
				return nil, true, s.answerStored(c, sg, f, nil)
			}
		}
		if spec.Replaces, err = s.files.PreviousCache(ctx, u.ID, spec.DocumentID); err != nil {
			return nil, false, err
		}
		sg.cache = "MISS"
	}
	if sg.pending, err = s.reserveFile(ctx, u, spec); err != nil {
		return nil, false, err
	}
	return sg, false, nil
}

// BlobKey is where the render must write.
func (sg *storedGenerate) BlobKey() string { return sg.pending.BlobKey() }

// abandon gives back what prepareGenerate reserved.
func (sg *storedGenerate) abandon(c echo.Context) {
	if sg != nil && sg.pending != nil {
		sg.pending.Abandon(c.Request().Context())
	}
}

// finish records the rendered file and answers.
func (s *Server) finishGenerate(c echo.Context, sg *storedGenerate, res *jobspb.Result) error {
	f, err := sg.pending.Commit(c.Request().Context(), res.Size)
	if err != nil {
		return err
	}
	return s.answerStored(c, sg, f, res.Report)
}

// answerStored answers with a stored file: spec 2.2 when hosted, else its bytes.
// r is the render report when the file was rendered for this answer (nil on a hit).
func (s *Server) answerStored(c echo.Context, sg *storedGenerate, f *files.File, r *jobspb.Report) error {
	h := c.Response().Header()
	if sg.cache != "" {
		h.Set(headerCache, sg.cache)
	}
	h.Set(headerPdfID, f.ID)
	if sg.host {
		return s.hostedResponse(c, f, r)
	}
	s.answeredWithFile(c, f.ID)
	return s.sendBlob(c, blob.FileKey(f.ID), f.Name, f.ContentType, "attachment")
}

// stagesKey is the steps' order in a caching ID or fingerprint: none
// given and an empty list differ (the latter is no step at all).
func stagesKey(order []string, ordered bool) []string {
	if !ordered {
		return nil
	}
	return append([]string{"stages"}, order...)
}
