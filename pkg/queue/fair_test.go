package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/docrender/docrender/proto/jobspb"
)

func batchDocument(account string, i int) *jobspb.Job {
	return &jobspb.Job{Id: fmt.Sprintf("%s-%d", account, i), AccountId: account,
		Kind: &jobspb.Job_BatchDocument{BatchDocument: &jobspb.BatchDocumentJob{BatchId: "b-" + account, Index: int32(i), Render: &jobspb.RenderJob{}}}}
}

// consumeOrder runs Consume with slots until want jobs were handled and
// returns their IDs in the order they started.
func consumeOrder(t *testing.T, c *Conn, slots, want int, hold time.Duration, busy *atomic.Int32, peak *atomic.Int32) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu    sync.Mutex
		order []string
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		_ = c.Consume(ctx, slots, func(ctx context.Context, job *jobspb.Job, d Delivery) (*jobspb.Result, error) {
			n := busy.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			order = append(order, job.Id)
			mu.Unlock()
			time.Sleep(hold)
			busy.Add(-1)
			return &jobspb.Result{}, nil
		}, nil)
	}()
	waitFor(t, "jobs handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= want
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return order
}

// Single renders go first, batch documents of two accounts interleave, and
// one account's batch alone gets every slot (DESIGN §5).
func TestFairScheduling(t *testing.T) {
	ctx := context.Background()
	t.Run("renders before batches, accounts in turn", func(t *testing.T) {
		c := embedded(t, 1000)
		for i := range 30 {
			if err := c.Publish(ctx, batchDocument("alice", i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 30 {
			if err := c.Publish(ctx, batchDocument("bob", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Publish(ctx, renderJob("single")); err != nil {
			t.Fatal(err)
		}
		var busy, peak atomic.Int32
		order := consumeOrder(t, c, 1, 21, 0, &busy, &peak)
		// A no-wait fetch may miss a message the server has not yet
		// readied for the consumer: one document ahead is within the rule.
		if order[0] != "single" && order[1] != "single" {
			t.Fatalf("order %v, want the single render ahead of 60 batch documents", order[:5])
		}
		counts := map[string]int{}
		for _, id := range order[:21] {
			if id != "single" {
				counts[strings.SplitN(id, "-", 2)[0]]++
			}
		}
		if counts["alice"] < 8 || counts["bob"] < 8 {
			t.Fatalf("first 20 batch documents by account %v, want about 10 each (order %v)", counts, order)
		}
	})
	t.Run("one batch alone uses every slot", func(t *testing.T) {
		c := embedded(t, 1000)
		for i := range 12 {
			if err := c.Publish(ctx, batchDocument("carol", i)); err != nil {
				t.Fatal(err)
			}
		}
		var busy, peak atomic.Int32
		consumeOrder(t, c, 4, 12, 300*time.Millisecond, &busy, &peak)
		if p := peak.Load(); p != 4 {
			t.Fatalf("at most %d documents ran at once, want all 4 slots", p)
		}
	})
	t.Run("a batch arriving later catches up", func(t *testing.T) {
		c := embedded(t, 1000)
		for i := range 80 {
			if err := c.Publish(ctx, batchDocument("erin", i)); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			time.Sleep(500 * time.Millisecond)
			for i := range 20 {
				_ = c.Publish(ctx, batchDocument("frank", i))
			}
		}()
		var busy, peak atomic.Int32
		order := consumeOrder(t, c, 2, 100, 50*time.Millisecond, &busy, &peak)
		first := slices.IndexFunc(order, func(id string) bool { return strings.HasPrefix(id, "frank") })
		if first < 0 || first+10 > len(order) {
			t.Fatalf("frank's documents: first at %d of %d", first, len(order))
		}
		franks := 0
		for _, id := range order[first : first+10] {
			if strings.HasPrefix(id, "frank") {
				franks++
			}
		}
		// Taking turns alone gives frank 5 of 10; erin's head start of half
		// a second (about 20 documents) is made up first.
		if franks < 8 {
			t.Fatalf("frank had %d of the 10 documents after his first, want most (order %v)", franks, order)
		}
	})
	t.Run("a render arriving during a batch runs next", func(t *testing.T) {
		c := embedded(t, 1000)
		for i := range 40 {
			if err := c.Publish(ctx, batchDocument("dave", i)); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			time.Sleep(500 * time.Millisecond)
			_ = c.Publish(ctx, renderJob("late"))
		}()
		var busy, peak atomic.Int32
		order := consumeOrder(t, c, 2, 40, 100*time.Millisecond, &busy, &peak)
		pos := -1
		for i, id := range order {
			if id == "late" {
				pos = i
			}
		}
		// 500 ms at 2 slots × 100 ms is about 10 documents started before it.
		if pos < 0 || pos > 16 {
			t.Fatalf("the render arriving mid-batch started as job %d of %d, want right after the documents in hand", pos, len(order))
		}
	})
}

// Versions before fair scheduling had one consumer on every subject and
// queued on "<prefix>render"; versions before worker kinds had one "now"
// consumer and queued on "<prefix>now.render" and "now.merge". A start
// deletes the old consumer and moves those jobs to the new subjects, where
// each kind's workers take them.
func TestOldJobsAreMoved(t *testing.T) {
	for _, tc := range []struct {
		name, consumer, filter string
		subjects               []string
	}{
		{"before fair scheduling", "", ">", []string{"render", "render", "merge"}},
		{"before worker kinds", "-now", "now.>", []string{"now.render", "now.merge", "now.render"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := embedded(t, 100)
			ctx := context.Background()
			for _, kind := range jobspb.WorkerKinds() {
				if err := c.js.DeleteConsumer(ctx, c.n.Stream, c.nowConsumer(kind)); err != nil {
					t.Fatal(err)
				}
			}
			old := c.n.Consumer + tc.consumer
			if _, err := c.js.CreateOrUpdateConsumer(ctx, c.n.Stream, c.consumerConfig(old, c.n.SubjectPrefix+tc.filter)); err != nil {
				t.Fatal(err)
			}
			for i, subj := range tc.subjects {
				job := renderJob(fmt.Sprintf("old-%d", i))
				if strings.HasSuffix(subj, "merge") {
					job.Kind = &jobspb.Job_Merge{Merge: &jobspb.MergeJob{}}
				}
				if _, err := c.js.Publish(ctx, c.n.SubjectPrefix+subj, mustMarshal(t, job)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Setup(ctx, Streams{MaxJobs: 100}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.js.Consumer(ctx, c.n.Stream, old); err == nil {
				t.Fatal("the old consumer is still there")
			}
			var busy, peak atomic.Int32
			order := consumeOrder(t, c, 1, 3, 0, &busy, &peak)
			slices.Sort(order)
			if strings.Join(order, ",") != "old-0,old-1,old-2" {
				t.Fatalf("handled %v, want the three old jobs", order)
			}
			s, _ := c.js.Stream(ctx, c.n.Stream)
			info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.SubjectPrefix+">"))
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 0 {
				t.Fatalf("%d messages left in the stream (%v)", info.State.Msgs, info.State.Subjects)
			}
		})
	}
}

// During a rolling upgrade a gateway of the version before publishes to
// "<prefix>now.render" after the new workers started: they move such jobs
// while they consume.
func TestOldJobsMovedWhileConsuming(t *testing.T) {
	c := embedded(t, 100)
	c.oldJobsEvery = 100 * time.Millisecond
	var busy, peak atomic.Int32
	done := make(chan []string, 1)
	go func() { done <- consumeOrder(t, c, 1, 1, 0, &busy, &peak) }()
	time.Sleep(200 * time.Millisecond)
	if _, err := c.js.Publish(context.Background(), c.n.SubjectPrefix+"now.render", mustMarshal(t, renderJob("late-old"))); err != nil {
		t.Fatal(err)
	}
	select {
	case order := <-done:
		if strings.Join(order, ",") != "late-old" {
			t.Fatalf("handled %v", order)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a job on an old subject was not moved while consuming")
	}
}

// TestWorkerKinds (DESIGN §1, §11): a worker takes the jobs of its kinds
// only, each kind from subjects of its own; batch documents of the chromium
// kind keep their account lanes.
func TestWorkerKinds(t *testing.T) {
	c := embedded(t, 100)
	ctx := context.Background()
	merge := &jobspb.Job{Id: "merge", Kind: &jobspb.Job_Merge{Merge: &jobspb.MergeJob{}}}
	doc := &jobspb.Job{Id: "doc", AccountId: "acct-1", Kind: &jobspb.Job_BatchDocument{BatchDocument: &jobspb.BatchDocumentJob{}}}
	for _, job := range []*jobspb.Job{renderJob("render"), merge, doc} {
		if err := c.Publish(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := c.js.Stream(ctx, c.n.Stream)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.SubjectPrefix+">"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"now.chromium.render": 1, "now.pdf.merge": 1, "batch.acct-1": 1}
	for subj, n := range want {
		if info.State.Subjects[c.n.SubjectPrefix+subj] != n {
			t.Errorf("subjects %v, want %v under %s", info.State.Subjects, want, c.n.SubjectPrefix)
		}
	}
	depths, err := c.KindDepths(ctx)
	if err != nil || depths[jobspb.KindChromium] != 2 || depths[jobspb.KindPDF] != 1 || depths[jobspb.KindOffice] != 0 {
		t.Errorf("depths %v %v, want chromium 2, pdf 1", depths, err)
	}
	taken := func(slots map[string]int, n int) []string {
		t.Helper()
		ctx, cancel := context.WithCancel(ctx)
		var mu sync.Mutex
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.ConsumeKinds(ctx, slots, func(_ context.Context, job *jobspb.Job, _ Delivery) (*jobspb.Result, error) {
				mu.Lock()
				got = append(got, job.Id)
				mu.Unlock()
				return &jobspb.Result{}, nil
			}, nil)
		}()
		waitFor(t, "jobs taken", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n })
		time.Sleep(300 * time.Millisecond) // nothing else comes
		cancel()
		<-done
		slices.Sort(got)
		return got
	}
	if got := taken(map[string]int{jobspb.KindPDF: 2, jobspb.KindOffice: 1}, 1); !slices.Equal(got, []string{"merge"}) {
		t.Errorf("a pdf and office worker took %v, want the merge only", got)
	}
	if got := taken(map[string]int{jobspb.KindChromium: 1}, 2); !slices.Equal(got, []string{"doc", "render"}) {
		t.Errorf("a chromium worker took %v, want the render and the batch document", got)
	}
	if err := c.ConsumeKinds(ctx, map[string]int{}, nil, nil); err == nil {
		t.Error("consuming no kind: no error")
	}
}

func mustMarshal(t *testing.T, job *jobspb.Job) []byte {
	t.Helper()
	data, err := proto.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestTakers: a kind with no worker has no takers; a worker of the kind,
// idle (its slots' pull requests waiting) or busy (a job in hand), counts;
// once it stops, the kind has none again within TakersWait.
func TestTakers(t *testing.T) {
	c := embedded(t, 100)
	ctx := context.Background()
	if n, err := c.Takers(ctx, jobspb.KindOffice); err != nil || n != 0 {
		t.Fatalf("no worker: %d takers, %v", n, err)
	}
	wctx, stop := context.WithCancel(ctx)
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.ConsumeKinds(wctx, map[string]int{jobspb.KindOffice: 1}, func(context.Context, *jobspb.Job, Delivery) (*jobspb.Result, error) {
			<-release
			return &jobspb.Result{}, nil
		}, nil)
	}()
	takers := func() int {
		n, err := c.Takers(ctx, jobspb.KindOffice)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "an idle worker's pull", func() bool { return takers() > 0 })
	if n, _ := c.Takers(ctx, jobspb.KindChromium); n != 0 {
		t.Errorf("the chromium kind has %d takers with only an office worker", n)
	}
	job := &jobspb.Job{Id: "office", Kind: &jobspb.Job_Office{Office: &jobspb.OfficeJob{}}}
	if err := c.Publish(ctx, job); err != nil {
		t.Fatal(err)
	}
	// Busy: its one slot holds the job, no pull waits, yet it counts.
	for range 5 {
		time.Sleep(TakersWait / 4)
		if takers() == 0 {
			t.Fatal("a busy worker counts no taker")
		}
	}
	close(release)
	stop()
	<-done
	waitFor(t, "no takers once the worker stopped", func() bool { return takers() == 0 })
}
