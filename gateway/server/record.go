package server

import (
	"google.golang.org/protobuf/proto"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/docrender/docrender/gateway/account"
	"io"
	"strconv"

	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/proto/jobspb"
)

// The multipart parts of DESIGN §8 on generate and merge.
const (
	partAttachments = "attachments"
	partEInvoiceXML = "factur-x.xml"
)

// recordParts takes a generate's or merge's §8 parts as they stream in:
// each "attachments" part into the blob store (never whole in memory), the
// "factur-x.xml" part into memory (it is parsed: at most
// pdfopts.MaxEInvoiceBytes).
type recordParts struct {
	blobs blob.Store
	dir   string // the request's own folder: attachments go under dir+"attach/"
	files []*jobspb.Attachment
	// sums are each attachment's SHA-256, for caching IDs and fingerprints
	// (the blob key differs per request).
	sums   []string
	xml    []byte
	hasXML bool
}

func newRecordParts(blobs blob.Store, jobDir string) *recordParts {
	return &recordParts{blobs: blobs, dir: jobDir}
}

// take reads part field if it is one of §8's; false: not one of them.
func (p *recordParts) take(ctx context.Context, field, name, mimeType string, r io.Reader) (bool, error) {
	if p == nil {
		return false, nil
	}
	switch field {
	case partAttachments:
		return true, p.attachment(ctx, name, mimeType, r)
	case partEInvoiceXML:
		if p.hasXML {
			return true, apierr.Invalid("einvoice.xml", "send the "+partEInvoiceXML+" part once")
		}
		b, err := io.ReadAll(io.LimitReader(r, pdfopts.MaxEInvoiceBytes+1))
		if err != nil {
			return true, bodyError(err)
		}
		p.xml, p.hasXML = b, true
		return true, pdfopts.CheckEInvoiceXML(b)
	}
	return false, nil
}

func (p *recordParts) attachment(ctx context.Context, name, mimeType string, r io.Reader) error {
	i := len(p.files)
	field := "attachments[" + strconv.Itoa(i) + "]"
	if i >= pdfopts.MaxAttachments {
		return apierr.Invalid("attachments", fmt.Sprintf("at most %d attachments", pdfopts.MaxAttachments))
	}
	if mimeType == "application/octet-stream" {
		mimeType = "" // what a client sends when it knows nothing: pick by name
	}
	a, err := pdfopts.Attachment(field, name, mimeType, "")
	if err != nil {
		return err
	}
	a.Key = p.dir + "attach/" + strconv.Itoa(i)
	cr := &countingReader{r: io.LimitReader(r, pdfopts.MaxAttachmentBytes+1), sum: sha256.New()}
	if err := p.blobs.Put(ctx, a.Key, cr, -1); err != nil {
		if cr.err != nil {
			return bodyError(cr.err)
		}
		return fmt.Errorf("store attachment: %w", err)
	}
	if cr.n > pdfopts.MaxAttachmentBytes {
		return apierr.Invalid(field, fmt.Sprintf("at most %d bytes", pdfopts.MaxAttachmentBytes))
	}
	a.Size = cr.n
	p.files = append(p.files, a)
	p.sums = append(p.sums, hex.EncodeToString(cr.sum.Sum(nil)))
	return nil
}

// apply adds the parts to the record the options asked for and checks the
// rules that join them (pdfopts.CheckRecord) on the whole.
func (p *recordParts) apply(rec *jobspb.Record, enc *jobspb.Encryption, untagged bool) (*jobspb.Record, error) {
	if p == nil || (len(p.files) == 0 && !p.hasXML) {
		return rec, nil
	}
	if rec == nil {
		rec = &jobspb.Record{}
	}
	rec.Attachments = append(rec.Attachments, p.files...)
	if p.hasXML {
		switch {
		case rec.Einvoice == nil:
			return nil, apierr.Invalid("einvoice.profile", "a "+partEInvoiceXML+" part needs the einvoice option with its profile, e.g. {\"einvoice\":{\"profile\":\"EN 16931\"}}")
		case len(rec.Einvoice.Xml) > 0:
			return nil, apierr.Invalid("einvoice.xml", "send the XML once: in einvoice.xml or as the "+partEInvoiceXML+" part")
		}
		rec.Einvoice.Xml, rec.Einvoice.XmlSize = p.xml, int64(len(p.xml))
	}
	if err := pdfopts.CheckRecord(rec, enc, untagged); err != nil {
		return nil, err
	}
	return rec, nil
}

// recordDigest is rec as a caching ID's or fingerprint's input: every
// attachment's bytes (inline, or an uploaded part's) by their SHA-256, not
// by the per-request key where they are stored.
func recordDigest(rec *jobspb.Record, parts *recordParts) *jobspb.Record {
	if rec == nil {
		return nil
	}
	out := proto.CloneOf(rec)
	sums := map[string]string{}
	if parts != nil {
		for i, a := range parts.files {
			sums[a.Key] = parts.sums[i]
		}
	}
	for _, a := range out.Attachments {
		if len(a.Data) > 0 || a.Key == "" {
			sum := sha256.Sum256(a.Data)
			a.Key, a.Data = hex.EncodeToString(sum[:]), nil
		} else {
			a.Key = sums[a.Key]
		}
	}
	if e := out.Einvoice; e != nil {
		sum := sha256.Sum256(e.Xml)
		e.XmlKey, e.Xml = hex.EncodeToString(sum[:]), nil
	}
	return out
}

// checkRecord is what a request's §8 options need from the gateway beyond
// their syntax: an e-invoice's XML, and the right to sign with the identity.
func (s *Server) checkRecord(rec *jobspb.Record, u *account.User, stages []string) error {
	return pdfopts.InStages(stages, s.checkRecordOptions(rec, u))
}

func (s *Server) checkRecordOptions(rec *jobspb.Record, u *account.User) error {
	if rec == nil {
		return nil
	}
	if rec.Einvoice != nil && len(rec.Einvoice.Xml) == 0 && rec.Einvoice.XmlKey == "" {
		return apierr.Invalid("einvoice.xml", "is required: send the invoice XML as the "+partEInvoiceXML+" part (or einvoice.xml in a batch)")
	}
	if sig := rec.Sign; sig != nil {
		return s.checkSigning(u, sig.Identity, sig.Timestamp)
	}
	return nil
}
