package boltstate_test

import (
	"path/filepath"
	"testing"

	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/statetest"
)

func TestContract(t *testing.T) {
	s, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	statetest.Run(t, s)
}
