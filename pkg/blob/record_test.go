package blob_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/blob"
	"github.com/docrender/docrender/proto/jobspb"
)

// A record's inline bytes go to the store; the copy a job carries names
// their keys and holds none of them, a part stored already keeps its key,
// the caller's record is left as it was, and LoadRecord gives every byte
// back, under one limit for all of them together.
func TestOffloadRecord(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Put(ctx, "jobs/j/attach/0", strings.NewReader("uploaded"), 8); err != nil {
		t.Fatal(err)
	}
	rec := &jobspb.Record{Pdfa: "3b",
		Attachments: []*jobspb.Attachment{{FileName: "a.csv", Data: []byte("a,b")}, {FileName: "up.txt", Key: "jobs/j/attach/0", Size: 8}},
		Einvoice:    &jobspb.EInvoice{Profile: "BASIC", Xml: []byte("<x/>")}}
	orig := proto.CloneOf(rec)
	out, err := blob.OffloadRecord(ctx, s, "jobs/j/", rec)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(rec, orig) {
		t.Error("the caller's record changed")
	}
	if a := out.Attachments[0]; a.Key == "" || a.Data != nil || a.Size != 3 {
		t.Errorf("offloaded attachment %v", a)
	}
	if a := out.Attachments[1]; a.Key != "jobs/j/attach/0" {
		t.Errorf("stored part moved: %v", a)
	}
	if e := out.Einvoice; e.XmlKey == "" || e.Xml != nil || e.XmlSize != 4 {
		t.Errorf("offloaded e-invoice %v", e)
	}
	back, err := blob.LoadRecord(ctx, s, out, 3+8+4)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Attachments[0].Data) != "a,b" || string(back.Attachments[1].Data) != "uploaded" || string(back.Einvoice.Xml) != "<x/>" {
		t.Errorf("loaded back %v", back)
	}
	if _, err := blob.LoadRecord(ctx, s, out, 3+8+3); !errors.Is(err, blob.ErrTooLarge) {
		t.Errorf("over the limit together: %v, want ErrTooLarge", err)
	}
	if err := s.Delete(ctx, "jobs/j/attach/0"); err != nil {
		t.Fatal(err)
	}
	if _, err := blob.LoadRecord(ctx, s, out, 1<<20); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("gone: %v, want ErrNotFound", err)
	}
	if r, err := blob.OffloadRecord(ctx, s, "x/", nil); r != nil || err != nil {
		t.Errorf("nil record: %v %v", r, err)
	}
}
