package redisstate_test

import (
	"context"
	"crypto/rand"
	"os"
	"testing"

	"github.com/docrender/docrender/pkg/state/redisstate"
	"github.com/docrender/docrender/pkg/state/statetest"
)

// redisURL is the machine's Redis; tests use it for real.
func redisURL() string {
	if u := os.Getenv("DOCRENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func TestContract(t *testing.T) {
	s, err := redisstate.Open(context.Background(), redisURL(), "test:"+rand.Text()[:8]+":")
	if err != nil {
		t.Fatalf("Redis must be running (scripts/setup --test starts it): %v", err)
	}
	defer s.Close()
	statetest.Run(t, s)
}

func TestBadURL(t *testing.T) {
	if _, err := redisstate.Open(context.Background(), "not-a-url", ""); err == nil {
		t.Fatal("accepted a bad URL")
	}
	if _, err := redisstate.Open(context.Background(), "redis://127.0.0.1:1/0", ""); err == nil {
		t.Fatal("connected to a closed port")
	}
}
