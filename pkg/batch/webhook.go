package batch

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/netguard"
	"github.com/docrender/docrender/pkg/queue"
	"github.com/docrender/docrender/proto/jobspb"
)

// Webhook events (DESIGN 4.18).
const (
	EventCompleted = "batch.completed"
	EventFailed    = "batch.failed"
)

// Headers of a webhook delivery.
const (
	SignatureHeader = "X-Docrender-Signature"
	DeliveryHeader  = "X-Docrender-Delivery"
	EventHeader     = "X-Docrender-Event"
)

// webhookTimeout bounds one delivery try; it stays below the delivery
// stream's ack wait, so a slow receiver is not delivered to twice at once.
const webhookTimeout = 10 * time.Second

// Payload is the body of a webhook delivery.
type Payload struct {
	Event       string `json:"event"`
	BatchID     string `json:"batchId"`
	Total       int    `json:"total"`
	Current     int    `json:"current"`
	Status      string `json:"status"`
	Message     string `json:"message"`
	DownloadURL string `json:"downloadUrl,omitempty"`
	ZipID       string `json:"zipId,omitempty"`
	ExpiresAt   string `json:"expiresAt,omitempty"`
	Timestamp   string `json:"timestamp"`
}

// Sign is the signature header value for body: sha256=<hex HMAC-SHA256>.
func Sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// CheckWebhookURL validates a webhook URL at submission and refuses one the
// delivery policy would block, so the client hears about it at once
// rather than never receiving a notification. Delivery checks again at
// dial time (a DNS name may change).
func CheckWebhookURL(ctx context.Context, raw string, policy *netguard.Policy) error {
	_, err := policy.CheckURL(ctx, "webhook.url", raw, "use webhook.secret to authenticate deliveries")
	return err
}

// Notify queues the webhook of a batch that has ended, if it has one. The
// delivery ID and body derive from the batch's terminal state only, so
// calling Notify again (a redelivered job) queues a duplicate that the
// stream drops, and every retry sends the same signed bytes.
func (t *Tracker) Notify(ctx context.Context, r *Record) error {
	if r.Webhook == nil || r.Webhook.URL == "" {
		return nil
	}
	f, err := t.terminal(ctx, r.ID)
	if err != nil || f == nil {
		return err
	}
	p := Payload{
		Event: EventFailed, BatchID: r.ID, Total: f.Total, Current: f.Current, Status: f.Status,
		Message: f.Message, Timestamp: apitime.Format(f.At),
	}
	if f.Status == Completed {
		p.Event = EventCompleted
		if f.Result != nil {
			p.DownloadURL, p.ZipID, p.ExpiresAt = f.Result.DownloadURL, f.Result.ZipID, f.Result.ExpiresAt
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("batch: webhook body: %w", err)
	}
	d := &jobspb.WebhookDelivery{
		DeliveryId: deliveryID(r.ID, p.Event), Url: r.Webhook.URL, Secret: r.Webhook.Secret,
		Body: body, BatchId: r.ID, Event: p.Event,
	}
	if err := t.q.PublishWebhook(ctx, d); err != nil {
		return fmt.Errorf("batch: queue webhook: %w", err)
	}
	return nil
}

// Deliverer posts webhook deliveries through the SSRF policy.
type Deliverer struct {
	client *http.Client
}

// NewDeliverer returns a deliverer whose every connection goes through
// policy (DOCRENDER_WEBHOOK_ALLOW_HOSTS) and which never follows redirects:
// a redirect could lead to an address the policy would refuse to name.
func NewDeliverer(policy *netguard.Policy) *Deliverer {
	tr := &http.Transport{
		DialContext:         policy.DialContext,
		Proxy:               nil,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &Deliverer{client: &http.Client{
		Transport:     tr,
		Timeout:       webhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// withoutURL is err without the URL net/http puts in it: a webhook URL may
// carry a token (in its query, say), and the error is logged.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// Deliver is a queue.WebhookHandler: one POST. A blocked or malformed
// target is permanent; any other failure or a non-2xx answer is retried.
func (d *Deliverer) Deliver(ctx context.Context, w *jobspb.WebhookDelivery, attempt int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.Url, bytes.NewReader(w.Body))
	if err != nil {
		return fmt.Errorf("%w: %v", queue.ErrPermanent, withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "docrender-webhook/1")
	req.Header.Set(DeliveryHeader, w.DeliveryId)
	req.Header.Set(EventHeader, w.Event)
	if w.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(w.Body, w.Secret))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		err = withoutURL(err)
		if errors.Is(err, netguard.ErrBlocked) {
			return fmt.Errorf("%w: %v", queue.ErrPermanent, err)
		}
		return fmt.Errorf("webhook: post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook: receiver answered %d", resp.StatusCode)
	}
	return nil
}
