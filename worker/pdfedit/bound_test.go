package pdfedit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// Merge and Inspect take the client's files: a file whose streams inflate
// past the bound is refused by name before pdfcpu keeps any of it, and the
// other files of the request are not blamed.
func TestClientInputsAreBounded(t *testing.T) {
	bomb := onePage("B", "", stream("/Filter [/FlateDecode /FlateDecode]", deflated(deflated(make([]byte, 300<<20)))))
	good := onePage("G", "")
	ctx := context.Background()
	_, err := Merge(ctx, []Input{{Name: "good.pdf", R: bytes.NewReader(good)}, {Name: "bomb.pdf", R: bytes.NewReader(bomb)}}, io.Discard)
	var bad *BadInputError
	if !errors.As(err, &bad) || bad.Name != "bomb.pdf" || !strings.Contains(bad.Error(), "256 MiB") {
		t.Errorf("merge of a bomb: %v, want a refusal naming bomb.pdf", err)
	}
	if _, err := Inspect(ctx, "bomb.pdf", bytes.NewReader(bomb)); !errors.As(err, &bad) || bad.Name != "bomb.pdf" {
		t.Errorf("inspect of a bomb: %v, want a refusal naming it", err)
	}
	// The check leaves the reader where pdfcpu expects it.
	if _, err := Merge(ctx, []Input{{Name: "a.pdf", R: bytes.NewReader(good)}, {Name: "b.pdf", R: bytes.NewReader(good)}}, io.Discard); err != nil {
		t.Errorf("merge of good files: %v", err)
	}
	if r, err := Inspect(ctx, "good.pdf", bytes.NewReader(good)); err != nil || r.Pages != 1 {
		t.Errorf("inspect of a good file: %v %v", r, err)
	}
}
