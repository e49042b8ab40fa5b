package blob

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/proto/jobspb"
)

// OffloadRecord stores the bytes a §8 record carries inline (attachments a
// batch sent as JSON, an e-invoice's XML) under dir, as OffloadWatermark
// does for an image, and returns a copy naming their keys: a job message
// stays small whatever the client attached. Parts already stored (a
// generate's uploaded attachments) keep their keys. dir is removed with
// the request's or batch's other temporary files.
func OffloadRecord(ctx context.Context, s Store, dir string, rec *jobspb.Record) (*jobspb.Record, error) {
	if rec == nil {
		return nil, nil
	}
	out := proto.CloneOf(rec)
	for i, a := range out.Attachments {
		if a.Key != "" {
			continue
		}
		a.Key = dir + "attachment-" + strconv.Itoa(i)
		if err := s.Put(ctx, a.Key, bytes.NewReader(a.Data), int64(len(a.Data))); err != nil {
			return nil, fmt.Errorf("blob: store attachment %q: %w", a.FileName, err)
		}
		a.Size, a.Data = int64(len(a.Data)), nil
	}
	if e := out.Einvoice; e != nil && e.XmlKey == "" && len(e.Xml) > 0 {
		e.XmlKey = dir + "einvoice.xml"
		if err := s.Put(ctx, e.XmlKey, bytes.NewReader(e.Xml), int64(len(e.Xml))); err != nil {
			return nil, fmt.Errorf("blob: store the e-invoice XML: %w", err)
		}
		e.XmlSize, e.Xml = int64(len(e.Xml)), nil
	}
	return out, nil
}

// LoadRecord undoes OffloadRecord on the worker's side: a copy of rec with
// every attachment's and the e-invoice's bytes read back, at most limit
// bytes together (over it: an error wrapping ErrTooLarge; gone: ErrNotFound).
func LoadRecord(ctx context.Context, s Store, rec *jobspb.Record, limit int64) (*jobspb.Record, error) {
	if rec == nil {
		return nil, nil
	}
	out := proto.CloneOf(rec)
	for _, a := range out.Attachments {
		if a.Key == "" {
			continue
		}
		data, err := ReadAll(ctx, s, a.Key, limit)
		if err != nil {
			return nil, fmt.Errorf("blob: attachment %q: %w", a.FileName, err)
		}
		limit -= int64(len(data))
		a.Data, a.Size, a.Key = data, int64(len(data)), ""
	}
	if e := out.Einvoice; e != nil && e.XmlKey != "" {
		data, err := ReadAll(ctx, s, e.XmlKey, limit)
		if err != nil {
			return nil, fmt.Errorf("blob: e-invoice XML: %w", err)
		}
		e.Xml, e.XmlSize, e.XmlKey = data, int64(len(data)), ""
	}
	return out, nil
}
