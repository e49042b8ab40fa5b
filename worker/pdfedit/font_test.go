package pdfedit

import "testing"

func TestUseEmbeddedFont(t *testing.T) {
	if err := UseEmbeddedFont(); err != nil {
		t.Fatal(err)
	}
}
