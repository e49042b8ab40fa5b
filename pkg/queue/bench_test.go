package queue

import (
	"context"
	"fmt"
	"testing"

	"github.com/docrender/docrender/proto/jobspb"
)

// BenchmarkRoundTrip is what the queue adds to one synchronous request:
// publish with JetStream's acknowledgement, a worker's pull, the result
// confirmed by the waiting side, and the worker's double ack, with a
// handler that does nothing. Embedded (in-process NATS, the default mode)
// and over TCP to the machine's nats-server (scaled out).
//
//	go test -run '^$' -bench RoundTrip -benchtime 2000x ./pkg/queue
func BenchmarkRoundTrip(b *testing.B) {
	servers := []struct {
		name    string
		connect func(testing.TB, int) *Conn
	}{
		{"embedded", embedded},
		{"nats-server over TCP", machineNATS},
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			c := srv.connect(b, 100000)
			consume(b, c, 4, func(context.Context, *jobspb.Job, Delivery) (*jobspb.Result, error) {
				return &jobspb.Result{}, nil
			})
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				p, err := c.Submit(ctx, renderJob(fmt.Sprintf("bench-%d", i)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
