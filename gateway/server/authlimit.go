package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// Login and register throttling (DESIGN §5). The counters live in the state
// store, so every gateway shares them, in fixed windows (the key names the
// window, so Retry-After is the time to its end).
const (
	// The attempts (login or register, whatever their outcome) from one
	// client address are bounded by DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE:
	// guessing across many emails, and the CPU of password hashing.
	authIPWindow = time.Minute
	// authEmailLimit bounds the failed attempts on one email: guessing
	// one account's password. Once reached, the right password is refused
	// too until the window ends, or the answers would tell a guess apart.
	authEmailLimit  = 10
	authEmailWindow = 15 * time.Minute
)

// authAttempt is one counted login or register request.
type authAttempt struct {
	s        *Server
	emailKey string
}

// startAuthAttempt counts an attempt from the client's address on email
// and refuses it with 429 RATE_LIMITED over either limit. Unknown and
// known emails take the same path. done(true) takes a success off the
// email's failures.
func (s *Server) startAuthAttempt(c echo.Context, email string) (*authAttempt, error) {
	ctx := c.Request().Context()
	now := time.Now()
	ipKey, ipReset := windowKey("authlimit:ip:"+clientKey(c.RealIP()), authIPWindow, now)
	emailKey, emailReset := windowKey("authlimit:email:"+emailDigest(email), authEmailWindow, now)
	ipN, err := s.State.IncrBy(ctx, ipKey, 1, authIPWindow+time.Minute)
	if err != nil {
		return nil, fmt.Errorf("auth throttle: %w", err)
	}
	failN, err := s.State.IncrBy(ctx, emailKey, 1, authEmailWindow+time.Minute)
	if err != nil {
		return nil, fmt.Errorf("auth throttle: %w", err)
	}
	switch {
	case ipN > int64(s.Config.AuthAttemptsPerMinute):
		s.Log.Warn("auth attempts throttled", "by", "ip", "ip", c.RealIP())
		return nil, rateLimited(fmt.Sprintf("Too many sign-in attempts from this address: at most %d a minute.", s.Config.AuthAttemptsPerMinute), ipReset)
	case failN > authEmailLimit:
		s.Log.Warn("auth attempts throttled", "by", "email")
		return nil, rateLimited(fmt.Sprintf("Too many failed sign-in attempts for this email: at most %d in %s.", authEmailLimit, authEmailWindow), emailReset)
	}
	return &authAttempt{s: s, emailKey: emailKey}, nil
}

// done ends the attempt: a success does not count as a failure.
func (a *authAttempt) done(ctx context.Context, ok bool) {
	if !ok {
		return
	}
	if _, err := a.s.State.IncrBy(context.WithoutCancel(ctx), a.emailKey, -1, authEmailWindow+time.Minute); err != nil {
		a.s.Log.Warn("auth throttle: success not recorded", "err", err)
	}
}

func rateLimited(msg string, reset time.Duration) *apierr.Error {
	secs := int(math.Ceil(reset.Seconds()))
	e := apierr.New(http.StatusTooManyRequests, msg)
	e.Hint = fmt.Sprintf("Retry in %d seconds.", secs)
	e.Header = map[string]string{"Retry-After": strconv.Itoa(secs)}
	return e
}

// windowKey is the counter's key for the window now falls in and the time
// left until that window ends.
func windowKey(prefix string, window time.Duration, now time.Time) (string, time.Duration) {
	n := now.UnixNano() / int64(window)
	end := time.Unix(0, (n+1)*int64(window))
	return prefix + ":" + strconv.FormatInt(n, 10), end.Sub(now)
}

// clientKey is the throttling key of a client address: an IPv6 client
// usually holds a whole /64, so that is what it is counted by.
func clientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return "invalid"
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// emailDigest names an email in counter keys without storing it.
func emailDigest(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return hex.EncodeToString(sum[:16])
}
