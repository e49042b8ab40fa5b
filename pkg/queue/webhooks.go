package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrender/docrender/pkg/tracing"
	"github.com/docrender/docrender/proto/jobspb"
)

// Webhook deliveries travel on a stream of their own: the job stream is a
// work queue whose one consumer takes every subject under SubjectPrefix,
// and deliveries need a consumer with other redelivery rules (many tries,
// long backoff) that a slow receiver must not take render slots from.
const (
	WebhookStream   = "DOCRENDER_WEBHOOKS"
	WebhookConsumer = "docrender-webhooks"
	WebhookSubject  = "docrender.webhooks.deliver"
	// WebhookMaxDeliver is how often a delivery is tried before it is dropped.
	WebhookMaxDeliver = 10
	// webhookDedup is how long a delivery ID is remembered: a batch step
	// redelivered after a crash re-queues its notification, and that copy
	// must be dropped.
	webhookDedup = 30 * time.Minute
	// webhookFirstDelay and webhookMaxDelay bound the retry backoff.
	webhookFirstDelay = time.Second
	webhookMaxDelay   = 5 * time.Minute
)

// webhookAckWait is when the server redelivers a delivery nobody answered
// for (its worker died mid-try). It must exceed the longest try (the HTTP
// timeout), or a slow receiver would get the same delivery twice at once.
//
// The retry backoff itself is not the consumer's BackOff list: a failed try
// is nak'ed with its delay (NakWithDelay, nats-server 2.7+), which the server
// records with the message, so it also holds across a restart. A BackOff
// list would override that delay for every try after the first (the server
// adds BackOff[n] to the nak's timestamp).
const webhookAckWait = 30 * time.Second

// ErrPermanent marks a delivery that retrying cannot help (a blocked
// address, a malformed URL): the handler wraps it and the delivery is dropped.
var ErrPermanent = errors.New("queue: permanent failure")

// WebhookRetryDelay is the wait after the attempt-th failed try: 1 s,
// doubling, at most 5 minutes.
func WebhookRetryDelay(attempt int) time.Duration {
	d := webhookFirstDelay
	for i := 1; i < attempt && d < webhookMaxDelay; i++ {
		d *= 2
	}
	return min(d, webhookMaxDelay)
}

// setupWebhooks creates the delivery stream and its consumer, with
// features of nats-server 2.9 only (NakWithDelay).
func (c *Conn) setupWebhooks(ctx context.Context, st Streams) error {
	err := c.upsertStream(ctx, jetstream.StreamConfig{
		Name:       c.n.WebhookStream,
		Subjects:   []string{c.n.WebhookSubject},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Duplicates: webhookDedup,
		MaxBytes:   st.MaxWebhookBytes,
		Replicas:   st.Replicas,
	})
	if err != nil {
		return fmt.Errorf("queue: webhook stream: %w", err)
	}
	_, err = c.js.CreateOrUpdateConsumer(ctx, c.n.WebhookStream, jetstream.ConsumerConfig{
		Durable:       c.n.WebhookConsumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		MaxDeliver:    WebhookMaxDeliver,
		AckWait:       webhookAckWait,
		FilterSubject: c.n.WebhookSubject,
		MaxAckPending: 10000,
	})
	if err != nil {
		return fmt.Errorf("queue: webhook consumer: %w", err)
	}
	return nil
}

// PublishWebhook queues a delivery. Its delivery ID deduplicates: queuing
// the same notification twice (a retried batch step) delivers it once.
// Traced, it is a producer span under ctx's (the batch step that finished).
func (c *Conn) PublishWebhook(ctx context.Context, d *jobspb.WebhookDelivery) (err error) {
	ctx, span := c.tracer.Start(ctx, "publish webhook", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(c.webhookAttributes(d, semconv.MessagingOperationTypeSend)...))
	defer func() { tracing.End(span, err) }()
	data, err := proto.Marshal(d)
	if err != nil {
		return fmt.Errorf("queue: marshal webhook: %w", err)
	}
	msg := &nats.Msg{Subject: c.n.WebhookSubject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, d.DeliveryId)
	InjectTrace(ctx, msg.Header)
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("queue: publish webhook: %w", err)
	}
	// A batch step tried again queues its notification again, on purpose;
	// the stream drops the copy, and the span says so: no delivery follows.
	span.SetAttributes(attribute.Bool("docrender.duplicate", ack.Duplicate))
	return nil
}

// WebhookHandler tries one delivery. nil: delivered. An error wrapping
// ErrPermanent: dropped. Any other error: tried again after
// WebhookRetryDelay, up to WebhookMaxDeliver tries.
type WebhookHandler func(ctx context.Context, d *jobspb.WebhookDelivery, attempt int) error

// ConsumeWebhooks runs slots concurrent deliverers until ctx ends, then
// waits for the deliveries in hand.
func (c *Conn) ConsumeWebhooks(ctx context.Context, slots int, h WebhookHandler) error {
	cons, err := c.js.Consumer(ctx, c.n.WebhookStream, c.n.WebhookConsumer)
	if err != nil {
		return fmt.Errorf("queue: webhook consumer: %w", err)
	}
	c.pull(ctx, cons, slots, func(msg jetstream.Msg) { c.deliver(msg, h) })
	return nil
}

// deliver runs one try and settles the message: ack, term, or nak with the
// backoff delay (the server keeps the delay, so it survives a restart).
func (c *Conn) deliver(msg jetstream.Msg, h WebhookHandler) {
	d := &jobspb.WebhookDelivery{}
	if err := proto.Unmarshal(msg.Data(), d); err != nil {
		c.log.Error("dropping undecodable webhook delivery", "err", err)
		_ = msg.Term()
		return
	}
	attempt := 1
	if md, err := msg.Metadata(); err == nil {
		attempt = int(md.NumDelivered)
	}
	log := c.log.With("delivery_id", d.DeliveryId, "batch_id", d.BatchId, "event", d.Event, "attempt", attempt)
	// One consumer span per try, a child of the span that queued it. The
	// receiver is not sent our trace context: it is a client's server.
	ctx, span := c.tracer.Start(ExtractTrace(context.Background(), msg.Headers()), "deliver webhook",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(append(c.webhookAttributes(d, semconv.MessagingOperationTypeProcess), attribute.Int("docrender.attempt", attempt))...))
	defer span.End()
	err := containedDelivery(ctx, h, d, attempt)
	switch {
	case err == nil:
		log.Info("webhook delivered")
		if err := msg.Ack(); err != nil {
			log.Warn("webhook ack failed", "err", err)
		}
	case errors.Is(err, ErrPermanent):
		tracing.Fail(span, "permanent")
		log.Warn("webhook dropped", "err", err)
		_ = msg.Term()
	case attempt >= WebhookMaxDeliver:
		tracing.Fail(span, "failed")
		log.Error("webhook failed on its last try", "err", err)
		_ = msg.Term()
	default:
		tracing.Fail(span, "retry")
		delay := WebhookRetryDelay(attempt)
		log.Warn("webhook failed, will retry", "err", err, "retry_in", delay.String())
		_ = msg.NakWithDelay(delay)
	}
}

// webhookAttributes are a delivery's span attributes: IDs and the event,
// never its URL (it may carry a secret) or payload.
func (c *Conn) webhookAttributes(d *jobspb.WebhookDelivery, op attribute.KeyValue) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.MessagingSystemKey.String("nats"), op,
		semconv.MessagingDestinationNameKey.String(c.n.WebhookSubject),
		semconv.MessagingMessageIDKey.String(d.DeliveryId),
		attribute.String("docrender.batch.id", d.BatchId),
		attribute.String("docrender.webhook.event", d.Event),
	}
}

// containedDelivery runs h, turning a panic into a permanent failure: the
// process goes on, and a delivery that panics once would panic again.
func containedDelivery(ctx context.Context, h WebhookHandler, d *jobspb.WebhookDelivery, attempt int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %w: %v", ErrPermanent, ErrPanicked, r)
		}
	}()
	return h(ctx, d, attempt)
}
