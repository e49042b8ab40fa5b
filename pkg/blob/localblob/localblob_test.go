package localblob_test

import (
	"context"
	"strings"
	"testing"

	"github.com/docrender/docrender/pkg/blob/blobtest"
	"github.com/docrender/docrender/pkg/blob/localblob"
)

func TestContract(t *testing.T) {
	s, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Run(t, s)
}

func TestRejectsEscapingKeys(t *testing.T) {
	s, err := localblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"../x", "a/../../x", "/etc/passwd", "a//b", `a\b`, ""} {
		if err := s.Put(context.Background(), k, strings.NewReader("x"), 1); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
	}
}
