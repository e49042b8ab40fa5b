package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/docrender/docrender/pkg/testenv/freeport"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// startCluster runs n JetStream servers clustered on loopback and returns
// them with a client URL of each.
func startCluster(t *testing.T, n int) ([]*server.Server, []string) {
	t.Helper()
	// Cluster ports must be known up front for the routes: take free ones.
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var srvs []*server.Server
	var urls []string
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "qtest", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(joinRoutes(routes, i)),
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(s.Shutdown)
		srvs = append(srvs, s)
	}
	for _, s := range srvs {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("cluster server not ready")
		}
		urls = append(urls, s.ClientURL())
	}
	return srvs, urls
}

func joinRoutes(routes []string, skip int) string {
	out := ""
	for i, r := range routes {
		if i == skip {
			continue
		}
		if out != "" {
			out += ","
		}
		out += r
	}
	return out
}

// On a 3-node cluster the streams get DOCRENDER_JOB_REPLICAS copies; a
// process started later with the default does not take them away; losing
// the quorum turns a publish into ErrUnavailable (a 503 to clients), not a
// plain failure, and the queue says it is not ready.
func TestStreamsOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	srvs, urls := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(url string) *Conn {
		t.Helper()
		c, err := Connect(ctx, url, nil, "qcluster", "test", quietLog())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	a := connect(urls[0])
	// JetStream needs its meta leader before a stream can be made.
	var setupErr error
	deadline := time.Now().Add(30 * time.Second)
	for {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		setupErr = a.Setup(actx, Streams{MaxJobs: 100, Replicas: 3})
		acancel()
		if setupErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no JetStream meta leader: %v", setupErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	replicas := func(c *Conn, name string) int {
		t.Helper()
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Replicas
	}
	for _, name := range []string{a.n.Stream, a.n.WebhookStream} {
		if r := replicas(a, name); r != 3 {
			t.Fatalf("%s has %d replicas, want 3", name, r)
		}
	}
	s, _ := a.js.Stream(ctx, a.n.Stream)
	if mb := s.CachedInfo().Config.MaxBytes; mb != DefaultMaxJobBytes {
		t.Fatalf("job stream max_bytes %d, want %d", mb, DefaultMaxJobBytes)
	}
	b := connect(urls[1])
	if err := b.Setup(ctx, Streams{MaxJobs: 100}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{a.n.Stream, a.n.WebhookStream} {
		if r := replicas(b, name); r != 3 {
			t.Fatalf("a default start lowered %s to %d replicas", name, r)
		}
	}
	if err := a.Ready(ctx); err != nil {
		t.Fatalf("Ready with the whole cluster up: %v", err)
	}
	if err := a.Publish(ctx, renderJob("before")); err != nil {
		t.Fatal(err)
	}
	// Two of three gone: no quorum for the stream.
	srvs[1].Shutdown()
	srvs[2].Shutdown()
	err := a.Publish(ctx, renderJob("after"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("publish without a quorum: %v, want ErrUnavailable", err)
	}
	// The stream's leader answers info until it notices the lost quorum
	// (Raft's lostQuorumInterval, 10 s); a readiness probe sees it then.
	deadline = time.Now().Add(30 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		err = a.Ready(rctx)
		rcancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Ready 30 s after the quorum was lost")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestQuorum(t *testing.T) {
	up := &jetstream.PeerInfo{Name: "b"}
	down := &jetstream.PeerInfo{Name: "c", Offline: true}
	tests := []struct {
		name string
		ci   *jetstream.ClusterInfo
		ok   bool
	}{
		{"single server", nil, true},
		{"one replica", &jetstream.ClusterInfo{Leader: "a"}, true},
		{"all up", &jetstream.ClusterInfo{Leader: "a", Replicas: []*jetstream.PeerInfo{up, up}}, true},
		{"one of three down", &jetstream.ClusterInfo{Leader: "a", Replicas: []*jetstream.PeerInfo{up, down}}, true},
		{"two of three down", &jetstream.ClusterInfo{Leader: "a", Replicas: []*jetstream.PeerInfo{down, down}}, false},
		{"no leader", &jetstream.ClusterInfo{Replicas: []*jetstream.PeerInfo{up, up}}, false},
		{"two of five down", &jetstream.ClusterInfo{Leader: "a", Replicas: []*jetstream.PeerInfo{up, up, down, down}}, true},
		{"three of five down", &jetstream.ClusterInfo{Leader: "a", Replicas: []*jetstream.PeerInfo{up, down, down, down}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := quorum(tt.ci)
			if (err == nil) != tt.ok {
				t.Fatalf("quorum = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("%v is not ErrUnavailable", err)
			}
		})
	}
}
