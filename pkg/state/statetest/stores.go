package statetest

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/docrender/docrender/pkg/state"
	"github.com/docrender/docrender/pkg/state/boltstate"
	"github.com/docrender/docrender/pkg/state/redisstate"
)

// Stores opens the two state stores a record lives in (DESIGN §1), for a
// test to run against each: a bbolt file in a temporary directory, and the
// machine's Redis (DOCRENDER_TEST_REDIS_URL, else 127.0.0.1:6379) under a
// prefix of its own. Both close with the test.
func Stores(t *testing.T) map[string]state.Store {
	t.Helper()
	bolt, err := boltstate.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	url := os.Getenv("DOCRENDER_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	red, err := redisstate.Open(context.Background(), url, "test:"+rand.Text()[:8]+":")
	if err != nil {
		t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
	}
	t.Cleanup(func() { red.Close() })
	return map[string]state.Store{"bbolt": bolt, "redis": red}
}
