package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"time"

	"github.com/digitorus/timestamp"
)

// ErrTSA is wrapped by every failure to get a time stamp: the job fails
// as INTERNAL with this text (JetStream retries it), never as the client's
// fault.
var ErrTSA = errors.New("time-stamp authority unavailable")

// Bounds of a time-stamp exchange.
const (
	tsaTimeout = 10 * time.Second
	maxTSAResp = 1 << 20
)

// TSA is an RFC 3161 time-stamp authority client (DOCRENDER_TSA_URL).
// Client nil: a plain http.Client; a call never takes longer than 10 s
// whatever the client's own timeout.
type TSA struct {
	URL    string
	Client *http.Client
}

// Stamp asks the TSA for a time-stamp token over data (its SHA-256) and
// returns the token (a DER ContentInfo), checked: status granted, our nonce
// and imprint back, the token's signature verifying with the certificate it
// carries. Errors wrap ErrTSA.
func (t *TSA) Stamp(ctx context.Context, data []byte) (token []byte, err error) {
	defer func() {
		if r := recover(); r != nil { // a hostile answer must not take the worker down
			token, err = nil, fmt.Errorf("%w: unreadable answer (%v)", ErrTSA, r)
		}
	}()
	if t == nil || t.URL == "" {
		return nil, fmt.Errorf("%w: no time-stamp authority configured", ErrTSA)
	}
	digest := sha256.Sum256(data)
	nonce, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, fmt.Errorf("%w: nonce: %v", ErrTSA, err)
	}
	req, err := (&timestamp.Request{
		HashAlgorithm: crypto.SHA256,
		HashedMessage: digest[:],
		Certificates:  true,
		Nonce:         nonce,
	}).Marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: request: %v", ErrTSA, err)
	}
	ctx, cancel := context.WithTimeout(ctx, tsaTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(req))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTSA, err)
	}
	hreq.Header.Set("Content-Type", "application/timestamp-query")
	hreq.Header.Set("Accept", "application/timestamp-reply")
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: tsaTimeout}
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTSA, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: HTTP %d", ErrTSA, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTSAResp+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTSA, err)
	}
	if len(body) > maxTSAResp {
		return nil, fmt.Errorf("%w: answer larger than 1 MiB", ErrTSA)
	}
	ts, err := timestamp.ParseResponse(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTSA, err)
	}
	switch {
	case ts.Nonce == nil || ts.Nonce.Cmp(nonce) != 0:
		return nil, fmt.Errorf("%w: the answer's nonce is not ours", ErrTSA)
	case ts.HashAlgorithm != crypto.SHA256 || !bytes.Equal(ts.HashedMessage, digest[:]):
		return nil, fmt.Errorf("%w: the token stamps other data", ErrTSA)
	case len(ts.Certificates) == 0:
		return nil, fmt.Errorf("%w: the token carries no certificate", ErrTSA)
	}
	return ts.RawToken, nil
}
