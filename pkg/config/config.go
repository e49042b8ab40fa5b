// Package config reads docrender's configuration once at start from the
// environment (DESIGN §2). The variable names are a public interface for operators.
package config

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Plan holds the limits of one plan.
type Plan struct {
	Name        string
	Conversions int64
	Hosted      int64
	Retention   time.Duration
	MaxBatch    int
}

// Config is the whole configuration of a gateway or worker process.
type Config struct {
	Addr string
	// WorkerAddr is where bin/worker serves /healthz, /readyz and /metrics.
	WorkerAddr string
	BaseURL    string
	DataDir    string
	NATSURL    string
	// QueueNamespace prefixes every stream, consumer and subject name, and
	// the Redis keys: deployments (or test runs) sharing servers stay apart.
	QueueNamespace string
	// SweepInterval is how often expired stored files are deleted.
	SweepInterval time.Duration
	RedisURL      string
	S3Endpoint    string
	S3AccessKey   string
	S3SecretKey   string
	S3Bucket      string
	S3UseSSL      bool
	ChromiumPath  string
	Workers       int
	RenderTimeout time.Duration
	MaxUpload     int64
	// MaxQueue bounds the jobs waiting in the queue; past it the gateway answers 429.
	MaxQueue          int
	RenderAllowHosts  []string
	WebhookAllowHosts []string
	Plans             map[string]Plan
	DefaultPlan       string
	LogLevel          string

	// ChromiumNoSandbox runs Chromium without its sandbox; DESIGN §5 allows
	// it only when asked for, and the worker says so in its log and metrics.
	ChromiumNoSandbox bool
	// ChromiumUser is the account Chromium runs as when the worker runs as
	// root: Chromium refuses its sandbox to root (decisions.md).
	ChromiumUser string
	// MetricsAddr, when set, serves /metrics there instead of on Addr.
	MetricsAddr string
	// AdminToken enables the operator's /api/admin routes; empty: off.
	AdminToken string
	// SelfServicePlans are the plans change-plan may switch to.
	SelfServicePlans []string
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// when telling a client's address (login throttling, logs); empty:
	// the connection's own address.
	TrustedProxies []netip.Prefix
	// AuthAttemptsPerMinute bounds login and register attempts from one
	// client address (DESIGN §5); behind a proxy it counts the proxy's
	// address unless TrustedProxies names it.
	AuthAttemptsPerMinute int
	// HTTP are the listeners' timeouts: DefaultHTTPTimeouts, not read
	// from the environment (tests shorten them).
	HTTP HTTPTimeouts
}

// HTTPTimeouts bound how long a client may hold a connection of any
// listener (DESIGN §5, the HTTP edge).
type HTTPTimeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader time.Duration
	// Read bounds reading a request after its headers. The API listener
	// extends it while a body keeps arriving at MinRate (uploads).
	Read time.Duration
	// Write bounds writing a response. The API listener counts it from the
	// response's first byte and adds its size at MinRate (downloads, results
	// of long renders); a progress stream gets it for each event.
	Write time.Duration
	// Idle bounds a kept-alive connection waiting for its next request.
	Idle time.Duration
	// MinRate is the slowest a body may arrive or a response be taken, in
	// bytes a second.
	MinRate int64
}

// DefaultHTTPTimeouts are the timeouts every listener runs with.
func DefaultHTTPTimeouts() HTTPTimeouts {
	return HTTPTimeouts{ReadHeader: 10 * time.Second, Read: 15 * time.Second, Write: 30 * time.Second,
		Idle: 120 * time.Second, MinRate: 64 << 10}
}

// Server is an http.Server for h with these timeouts.
func (t HTTPTimeouts) Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

var nsRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)

// PlanNames lists the plans in ascending order.
var PlanNames = []string{"hobby", "pro", "enterprise"}

// Load parses the environment through getenv (os.Getenv in production).
func Load(getenv func(string) string) (Config, error) {
	p := parser{getenv: getenv}
	c := Config{
		Addr:                  p.str("DOCRENDER_ADDR", ":8080"),
		WorkerAddr:            p.str("DOCRENDER_WORKER_ADDR", ":9090"),
		BaseURL:               strings.TrimRight(p.str("DOCRENDER_BASE_URL", "http://localhost:8080"), "/"),
		DataDir:               p.str("DOCRENDER_DATA_DIR", "./data"),
		NATSURL:               p.str("DOCRENDER_NATS_URL", ""),
		QueueNamespace:        p.str("DOCRENDER_QUEUE_NAMESPACE", "docrender"),
		SweepInterval:         p.duration("DOCRENDER_SWEEP_INTERVAL", time.Minute),
		RedisURL:              p.str("DOCRENDER_REDIS_URL", ""),
		S3Endpoint:            p.str("DOCRENDER_S3_ENDPOINT", ""),
		S3AccessKey:           p.str("DOCRENDER_S3_ACCESS_KEY", ""),
		S3SecretKey:           p.str("DOCRENDER_S3_SECRET_KEY", ""),
		S3Bucket:              p.str("DOCRENDER_S3_BUCKET", "docrender"),
		S3UseSSL:              p.boolean("DOCRENDER_S3_USE_SSL", false),
		ChromiumPath:          p.str("DOCRENDER_CHROMIUM_PATH", ""),
		Workers:               p.integer("DOCRENDER_WORKERS", runtime.NumCPU()),
		RenderTimeout:         p.duration("DOCRENDER_RENDER_TIMEOUT", 30*time.Second),
		MaxUpload:             int64(p.integer("DOCRENDER_MAX_UPLOAD_BYTES", 52428800)),
		MaxQueue:              p.integer("DOCRENDER_MAX_QUEUE", 10000),
		RenderAllowHosts:      p.list("DOCRENDER_RENDER_ALLOW_HOSTS"),
		WebhookAllowHosts:     p.list("DOCRENDER_WEBHOOK_ALLOW_HOSTS"),
		DefaultPlan:           strings.ToLower(p.str("DOCRENDER_DEFAULT_PLAN", "hobby")),
		LogLevel:              p.str("DOCRENDER_LOG_LEVEL", "info"),
		ChromiumNoSandbox:     p.boolean("DOCRENDER_CHROMIUM_NO_SANDBOX", false),
		ChromiumUser:          p.str("DOCRENDER_CHROMIUM_USER", "nobody"),
		MetricsAddr:           p.str("DOCRENDER_METRICS_ADDR", ""),
		AdminToken:            p.str("DOCRENDER_ADMIN_TOKEN", ""),
		SelfServicePlans:      p.list("DOCRENDER_SELF_SERVICE_PLANS"),
		TrustedProxies:        p.prefixes("DOCRENDER_TRUSTED_PROXIES"),
		AuthAttemptsPerMinute: p.integer("DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE", 30),
		HTTP:                  DefaultHTTPTimeouts(),
	}
	if c.SelfServicePlans == nil {
		c.SelfServicePlans = append([]string(nil), PlanNames...)
	}
	defaults := map[string]Plan{
		"hobby":      {Conversions: 100, Hosted: 10, Retention: 24 * time.Hour, MaxBatch: 10},
		"pro":        {Conversions: 10000, Hosted: 500, Retention: 168 * time.Hour, MaxBatch: 200},
		"enterprise": {Conversions: 100000, Hosted: 10000, Retention: 720 * time.Hour, MaxBatch: 5000},
	}
	c.Plans = make(map[string]Plan, len(defaults))
	for _, name := range PlanNames {
		d := defaults[name]
		up := "DOCRENDER_PLAN_" + strings.ToUpper(name) + "_"
		c.Plans[name] = Plan{
			Name:        name,
			Conversions: int64(p.integer(up+"CONVERSIONS", int(d.Conversions))),
			Hosted:      int64(p.integer(up+"HOSTED", int(d.Hosted))),
			Retention:   p.duration(up+"RETENTION", d.Retention),
			MaxBatch:    p.integer(up+"MAX_BATCH", d.MaxBatch),
		}
	}
	if _, ok := c.Plans[c.DefaultPlan]; !ok {
		p.fail("DOCRENDER_DEFAULT_PLAN", c.DefaultPlan, "one of hobby, pro, enterprise")
	}
	for _, name := range c.SelfServicePlans {
		if _, ok := c.Plans[name]; !ok {
			p.fail("DOCRENDER_SELF_SERVICE_PLANS", name, "plan names among hobby, pro, enterprise")
		}
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		p.fail("DOCRENDER_ADMIN_TOKEN", "(hidden)", "at least 16 characters")
	}
	if c.AuthAttemptsPerMinute < 1 {
		p.fail("DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE", strconv.Itoa(c.AuthAttemptsPerMinute), "at least 1")
	}
	if !nsRe.MatchString(c.QueueNamespace) {
		p.fail("DOCRENDER_QUEUE_NAMESPACE", c.QueueNamespace, "lower-case letters, digits and dashes")
	}
	if c.Workers < 1 {
		p.fail("DOCRENDER_WORKERS", strconv.Itoa(c.Workers), "at least 1")
	}
	if c.RenderTimeout <= 0 {
		p.fail("DOCRENDER_RENDER_TIMEOUT", c.RenderTimeout.String(), "a positive duration")
	}
	if p.err != nil {
		return Config{}, p.err
	}
	return c, nil
}

// FromEnv loads the configuration from the process environment.
func FromEnv() (Config, error) { return Load(os.Getenv) }

// Embedded reports whether this process runs its own NATS server and workers.
func (c Config) Embedded() bool { return c.NATSURL == "" }

type parser struct {
	getenv func(string) string
	err    error
}

func (p *parser) fail(name, val, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("config: %s=%q: want %s", name, val, want)
	}
}

func (p *parser) str(name, def string) string {
	if v := strings.TrimSpace(p.getenv(name)); v != "" {
		return v
	}
	return def
}

func (p *parser) integer(name string, def int) int {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.fail(name, v, "an integer")
	}
	return n
}

func (p *parser) boolean(name string, def bool) bool {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, v, "true or false")
	}
	return b
}

func (p *parser) duration(name string, def time.Duration) time.Duration {
	v := p.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		p.fail(name, v, "a Go duration such as 30s")
	}
	return d
}

// prefixes reads a list of CIDRs or single addresses.
func (p *parser) prefixes(name string) []netip.Prefix {
	var out []netip.Prefix
	for _, f := range p.list(name) {
		if pre, err := netip.ParsePrefix(f); err == nil {
			out = append(out, pre.Masked())
		} else if ip, err := netip.ParseAddr(f); err == nil && ip.Zone() == "" {
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
		} else {
			p.fail(name, f, "CIDRs or IP addresses, comma-separated")
		}
	}
	return out
}

func (p *parser) list(name string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(p.str(name, ""), func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, strings.ToLower(f))
	}
	return out
}
