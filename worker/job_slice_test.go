package worker

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/pkg/blob/localblob"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/proto/jobspb"
	"github.com/docrender/docrender/worker/render"
)

// TestSliceFarmHeard: a slice cut before loading comes back from the farm
// with what its printer's tab heard, as Finish stored it; a slice of a
// loaded page without; and one whose stored report cannot be read is free
// again, for the job to print (not waited for until the job's time is up).
func TestSliceFarmHeard(t *testing.T) {
	ctx := context.Background()
	blobs, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &Worker{blobs: blobs, state: st, log: slog.New(slog.DiscardHandler)}
	heard := &jobspb.Report{FailedRequests: []*jobspb.FailedRequest{{Url: "gone.png", Status: 404}}, FailedTotal: 3, ImagesWithoutAlt: []string{"a.png"}, ImagesWithoutAltTotal: 1}
	pdf := []byte("%PDF-1.7 a slice")
	for _, tc := range []struct {
		name    string
		cut     bool
		corrupt bool
	}{{"cut", true, false}, {"loaded page", false, false}, {"cut, report unreadable", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := w.newSliceFarm(&jobspb.Job{Id: "job-" + strings.ReplaceAll(tc.name, " ", "")})
			s := render.Slice{Index: 1, Key: "001-abc", Cut: tc.cut}
			if ok, err := f.Claim(ctx, s); err != nil || !ok {
				t.Fatalf("claim: %v %v", ok, err)
			}
			var sent *jobspb.Report
			if tc.cut {
				sent = heard
			}
			if err := f.Finish(ctx, s, pdf, sent); err != nil {
				t.Fatal(err)
			}
			if tc.corrupt {
				bad := "\xff\xff\xff"
				if err := blobs.Put(ctx, f.heardKey(s), strings.NewReader(bad), int64(len(bad))); err != nil {
					t.Fatal(err)
				}
			}
			got, gotHeard, free, err := f.Result(ctx, s)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.corrupt:
				if got != nil || !free {
					t.Errorf("unreadable report: PDF %q, free %v; want the slice free again", got, free)
				}
			case !bytes.Equal(got, pdf) || free:
				t.Errorf("PDF %q, free %v; want the stored PDF", got, free)
			case tc.cut && !proto.Equal(gotHeard, heard):
				t.Errorf("heard %v, want %v", gotHeard, heard)
			case !tc.cut && gotHeard != nil:
				t.Errorf("a slice of a loaded page came back with a report: %v", gotHeard)
			}
			f.Close(ctx)
		})
	}
}
