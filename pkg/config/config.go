// Package config reads docrender's configuration once at start from the
// environment (DESIGN §2). The variable names are a public interface for operators.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docrender/docrender/pkg/signids"
	"github.com/docrender/docrender/proto/jobspb"
)

// Plan holds the limits of one plan.
type Plan struct {
	Name        string
	Conversions int64
	Hosted      int64
	Retention   time.Duration
	MaxBatch    int
	// Concurrency is how many requests of one account may be in flight at
	// once (generate, merge; a batch counts one).
	Concurrency int
	// Rate is how many keyed requests one account may make a minute.
	Rate int
	// Templates is how many stored templates one account may keep
	// (DESIGN §9); versions of a stored template are not counted.
	Templates int64
	// MaxPages bounds the pages of one rendered document (DESIGN §10).
	MaxPages int
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
	// DrainDelay is how long a gateway told to stop answers /readyz with
	// 503 while still serving, so load balancers stop sending first.
	DrainDelay   time.Duration
	RedisURL     string
	S3Endpoint   string
	S3AccessKey  string
	S3SecretKey  string
	S3Bucket     string
	S3UseSSL     bool
	ChromiumPath string
	// OfficePath is LibreOffice's soffice (DOCRENDER_OFFICE_PATH); empty:
	// found on PATH.
	OfficePath    string
	Workers       int
	RenderTimeout time.Duration
	MaxUpload     int64
	// MaxOutputBytes bounds one rendered PDF as Chromium prints it (DESIGN
	// §10): a worker holds it in memory.
	MaxOutputBytes int64
	// SplitPages is the length past which a document is printed in slices
	// by several tabs (DESIGN §10).
	SplitPages int
	// SlicePages bounds the estimated pages of one slice (DESIGN §10):
	// Chromium fails on thousands of pages in one print, and scaled out,
	// smaller slices let more workers help and make another account's job
	// wait less for a slot.
	SlicePages int
	// MaxQueue bounds the jobs waiting in the queue; past it the gateway answers 429.
	MaxQueue int
	// MaxStreamsPerAccount bounds the progress streams (SSE) one account
	// holds open at once, over every gateway: each costs a connection and
	// a share of its batch's watcher until the batch ends.
	MaxStreamsPerAccount int
	RenderAllowHosts     []string
	WebhookAllowHosts    []string
	Plans                map[string]Plan
	DefaultPlan          string
	LogLevel             string

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
	// JobReplicas is the JetStream replica count of the job and webhook
	// streams (3 on a 3-node cluster).
	JobReplicas int
	// Tracing is where traces go (OpenTelemetry's own variables, DESIGN §7).
	Tracing Tracing
	// SigningDir holds the operator's signing identities (DESIGN §8);
	// empty: signing is off.
	SigningDir string
	// SigningIdentities are the identity names in SigningDir, listed at
	// start without reading a key (pkg/signids); the worker loads the keys.
	SigningIdentities []string
	// TSAURL is the RFC 3161 time-stamp authority of PAdES B-T
	// signatures; empty: only B-B.
	TSAURL string
	// WorkerKinds are the job kinds a worker process takes (DESIGN §1,
	// §11: chromium, pdf, office), each from its own queue subjects.
	WorkerKinds []string

	// Warnings name DOCRENDER_ variables that were set but mean nothing
	// here (a misspelling, most likely), each with the closest known name.
	// The process logs them at start.
	Warnings []string
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

// Load parses the environment through getenv.
func Load(getenv func(string) string) (Config, error) {
	c, _, err := load(getenv)
	return c, err
}

func load(getenv func(string) string) (Config, map[string]bool, error) {
	p := parser{getenv: getenv, read: map[string]bool{}}
	c := Config{
		Addr:                  p.str("DOCRENDER_ADDR", ":8080"),
		WorkerAddr:            p.str("DOCRENDER_WORKER_ADDR", ":9090"),
		BaseURL:               strings.TrimRight(p.str("DOCRENDER_BASE_URL", "http://localhost:8080"), "/"),
		DataDir:               p.str("DOCRENDER_DATA_DIR", "./data"),
		NATSURL:               p.str("DOCRENDER_NATS_URL", ""),
		QueueNamespace:        p.str("DOCRENDER_QUEUE_NAMESPACE", "docrender"),
		SweepInterval:         p.duration("DOCRENDER_SWEEP_INTERVAL", time.Minute),
		DrainDelay:            p.duration("DOCRENDER_DRAIN_DELAY", 5*time.Second),
		RedisURL:              p.str("DOCRENDER_REDIS_URL", ""),
		S3Endpoint:            p.str("DOCRENDER_S3_ENDPOINT", ""),
		S3AccessKey:           p.str("DOCRENDER_S3_ACCESS_KEY", ""),
		S3SecretKey:           p.str("DOCRENDER_S3_SECRET_KEY", ""),
		S3Bucket:              p.str("DOCRENDER_S3_BUCKET", "docrender"),
		S3UseSSL:              p.boolean("DOCRENDER_S3_USE_SSL", false),
		ChromiumPath:          p.str("DOCRENDER_CHROMIUM_PATH", ""),
		OfficePath:            p.str("DOCRENDER_OFFICE_PATH", ""),
		Workers:               p.integer("DOCRENDER_WORKERS", runtime.NumCPU()),
		RenderTimeout:         p.duration("DOCRENDER_RENDER_TIMEOUT", 30*time.Second),
		MaxUpload:             int64(p.integer("DOCRENDER_MAX_UPLOAD_BYTES", 52428800)),
		MaxOutputBytes:        int64(p.integer("DOCRENDER_MAX_OUTPUT_BYTES", 512<<20)),
		SplitPages:            p.integer("DOCRENDER_SPLIT_PAGES", 2000),
		SlicePages:            p.integer("DOCRENDER_SLICE_PAGES", 400),
		MaxQueue:              p.integer("DOCRENDER_MAX_QUEUE", 10000),
		MaxStreamsPerAccount:  p.integer("DOCRENDER_MAX_STREAMS_PER_ACCOUNT", 20),
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
		JobReplicas:           p.integer("DOCRENDER_JOB_REPLICAS", 1),
		SigningDir:            p.str("DOCRENDER_SIGNING_DIR", ""),
		WorkerKinds:           p.workerKinds("DOCRENDER_WORKER_KINDS"),
		TSAURL:                p.str("DOCRENDER_TSA_URL", ""),
	}
	c.Tracing = p.tracing()
	if c.SelfServicePlans == nil {
		c.SelfServicePlans = append([]string(nil), PlanNames...)
	}
	defaults := map[string]Plan{
		"hobby":      {Conversions: 100, Hosted: 10, Retention: 24 * time.Hour, MaxBatch: 10, Concurrency: 2, Rate: 60, Templates: 5, MaxPages: 500},
		"pro":        {Conversions: 10000, Hosted: 500, Retention: 168 * time.Hour, MaxBatch: 200, Concurrency: 8, Rate: 600, Templates: 100, MaxPages: 5000},
		"enterprise": {Conversions: 100000, Hosted: 10000, Retention: 720 * time.Hour, MaxBatch: 5000, Concurrency: 32, Rate: 6000, Templates: 1000, MaxPages: 20000},
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
			Concurrency: p.integer(up+"CONCURRENCY", d.Concurrency),
			Rate:        p.integer(up+"RATE", d.Rate),
			Templates:   int64(p.integer(up+"TEMPLATES", int(d.Templates))),
			MaxPages:    p.integer(up+"MAX_PAGES", d.MaxPages),
		}
		pl := c.Plans[name]
		p.atLeast(up+"CONVERSIONS", int(pl.Conversions), 1)
		p.atLeast(up+"HOSTED", int(pl.Hosted), 0)
		p.positive(up+"RETENTION", pl.Retention)
		p.atLeast(up+"MAX_BATCH", pl.MaxBatch, 1)
		p.atLeast(up+"CONCURRENCY", pl.Concurrency, 1)
		p.atLeast(up+"RATE", pl.Rate, 1)
		p.atLeast(up+"TEMPLATES", int(pl.Templates), 0)
		p.atLeast(up+"MAX_PAGES", pl.MaxPages, 1)
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
	p.atLeast("DOCRENDER_AUTH_ATTEMPTS_PER_MINUTE", c.AuthAttemptsPerMinute, 1)
	if !nsRe.MatchString(c.QueueNamespace) {
		p.fail("DOCRENDER_QUEUE_NAMESPACE", c.QueueNamespace, "lower-case letters, digits and dashes")
	}
	p.atLeast("DOCRENDER_WORKERS", c.Workers, 1)
	p.positive("DOCRENDER_RENDER_TIMEOUT", c.RenderTimeout)
	p.positive("DOCRENDER_SWEEP_INTERVAL", c.SweepInterval)
	p.atLeast("DOCRENDER_MAX_UPLOAD_BYTES", int(c.MaxUpload), 1024)
	p.atLeast("DOCRENDER_MAX_OUTPUT_BYTES", int(c.MaxOutputBytes), 1024)
	p.atLeast("DOCRENDER_SPLIT_PAGES", c.SplitPages, 2)
	p.atLeast("DOCRENDER_SLICE_PAGES", c.SlicePages, 1)
	p.atLeast("DOCRENDER_MAX_QUEUE", c.MaxQueue, 1)
	p.atLeast("DOCRENDER_MAX_STREAMS_PER_ACCOUNT", c.MaxStreamsPerAccount, 1)
	if c.JobReplicas < 1 || c.JobReplicas > 5 {
		p.fail("DOCRENDER_JOB_REPLICAS", strconv.Itoa(c.JobReplicas), "1 to 5 (JetStream's limit)")
	}
	p.url("DOCRENDER_BASE_URL", c.BaseURL, "http", "https")
	for _, u := range strings.Split(c.NATSURL, ",") {
		if c.NATSURL != "" {
			p.url("DOCRENDER_NATS_URL", strings.TrimSpace(u), "nats", "tls", "ws", "wss")
		}
	}
	if c.RedisURL != "" {
		p.url("DOCRENDER_REDIS_URL", c.RedisURL, "redis", "rediss")
	}
	if c.NATSURL != "" && c.RedisURL == "" {
		// A bbolt file is one process's own: gateways and workers of a
		// scaled-out service would each see different accounts and batches.
		p.fail("DOCRENDER_REDIS_URL", "", "a Redis URL when DOCRENDER_NATS_URL is set (scaled out, every process must share one state store)")
	}
	if c.TSAURL != "" {
		p.url("DOCRENDER_TSA_URL", c.TSAURL, "http", "https")
	}
	if c.SigningDir != "" {
		c.SigningIdentities = p.signingIdentities("DOCRENDER_SIGNING_DIR", c.SigningDir)
	}
	if c.S3Endpoint != "" {
		if strings.Contains(c.S3Endpoint, "://") || strings.ContainsAny(c.S3Endpoint, "/?#") {
			p.fail("DOCRENDER_S3_ENDPOINT", c.S3Endpoint, "host:port without scheme or path (DOCRENDER_S3_USE_SSL chooses https)")
		}
		if c.S3AccessKey == "" || c.S3SecretKey == "" {
			p.fail("DOCRENDER_S3_ACCESS_KEY", "", "set, with DOCRENDER_S3_SECRET_KEY, when DOCRENDER_S3_ENDPOINT is set")
		}
	}
	if p.err != nil {
		return Config{}, nil, p.err
	}
	return c, p.read, nil
}

// FromEnv loads the configuration from the process environment.
func FromEnv() (Config, error) { return LoadEnviron(os.Environ()) }

// LoadEnviron loads the configuration from environ (NAME=value entries),
// with a warning for each DOCRENDER_ variable that means nothing.
func LoadEnviron(environ []string) (Config, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	c, read, err := load(func(k string) string { return env[k] })
	if err != nil {
		return c, err
	}
	c.Warnings = unknownNames(env, read)
	return c, nil
}

// toolPrefixes are DOCRENDER_ variables of the repository's scripts and
// tests, not of the service: no warning for them.
var toolPrefixes = []string{"DOCRENDER_TEST_", "DOCRENDER_BENCH_", "DOCRENDER_CACHE", "DOCRENDER_SOAK", "DOCRENDER_CLUSTER_"}

// unknownNames warns of each DOCRENDER_ name in env that Load did not read,
// naming the known name closest to it.
func unknownNames(env map[string]string, read map[string]bool) []string {
	var out []string
	for k := range env {
		if !strings.HasPrefix(k, "DOCRENDER_") || read[k] || slices.ContainsFunc(toolPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		best, bestD := "", -1
		for known := range read {
			if !strings.HasPrefix(known, "DOCRENDER_") {
				continue // OpenTelemetry's names (tracing.go) are no suggestion
			}
			if d := editDistance(k, known); bestD < 0 || d < bestD || (d == bestD && known < best) {
				best, bestD = known, d
			}
		}
		out = append(out, fmt.Sprintf("%s is not a docrender setting and is ignored; did you mean %s?", k, best))
	}
	slices.Sort(out)
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Embedded reports whether this process runs its own NATS server and workers.
func (c Config) Embedded() bool { return c.NATSURL == "" }

// parser reads variables and collects every problem, so that an operator
// fixes them all in one round.
type parser struct {
	getenv func(string) string
	// read are the names looked up: every name the service knows.
	read map[string]bool
	err  error
}

func (p *parser) fail(name, val, want string) {
	p.err = errors.Join(p.err, fmt.Errorf("config: %s=%q: want %s", name, val, want))
}

func (p *parser) atLeast(name string, v, least int) {
	if v < least {
		p.fail(name, strconv.Itoa(v), fmt.Sprintf("at least %d", least))
	}
}

func (p *parser) positive(name string, d time.Duration) {
	if d <= 0 {
		p.fail(name, d.String(), "a positive duration")
	}
}

// url checks that v is an absolute URL of one of schemes, with a host.
func (p *parser) url(name, v string, schemes ...string) {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		p.fail(name, v, "an absolute URL of scheme "+strings.Join(schemes, ", ")+" with a host")
	}
}

// signingIdentities lists the identities in dir; an unreadable directory,
// a broken identity or none at all refuses the start (DESIGN §8).
func (p *parser) signingIdentities(name, dir string) []string {
	names, err := signids.Names(dir)
	if err != nil {
		p.fail(name, dir, "a readable directory of signing identities: "+err.Error())
		return nil
	}
	if len(names) == 0 {
		p.fail(name, dir, "a directory holding at least one identity (NAME.p12 with NAME.pass, or NAME.crt with NAME.key)")
	}
	return names
}

func (p *parser) str(name, def string) string {
	p.read[name] = true
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
		return def // one problem per variable
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
		return def // one problem per variable
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

// workerKinds reads a list of worker kinds, each known and once; unset:
// every kind.
func (p *parser) workerKinds(name string) []string {
	kinds := p.list(name)
	if len(kinds) == 0 {
		return jobspb.WorkerKinds()
	}
	for i, k := range kinds {
		if !slices.Contains(jobspb.WorkerKinds(), k) || slices.Contains(kinds[:i], k) {
			p.fail(name, strings.Join(kinds, ","), "worker kinds from "+strings.Join(jobspb.WorkerKinds(), ", ")+", each once")
			return nil
		}
	}
	return kinds
}

// Kinds are the worker kinds a worker of c takes: WorkerKinds, every kind
// when none are set (a Config built without Load).
func (c Config) Kinds() []string {
	if len(c.WorkerKinds) == 0 {
		return jobspb.WorkerKinds()
	}
	return c.WorkerKinds
}

// Takes says whether a worker of c takes jobs of kind.
func (c Config) Takes(kind string) bool { return slices.Contains(c.Kinds(), kind) }

func (p *parser) list(name string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(p.str(name, ""), func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, strings.ToLower(f))
	}
	return out
}

// LogWarnings logs c.Warnings, once, at start.
func (c Config) LogWarnings(log *slog.Logger) {
	for _, w := range c.Warnings {
		log.Warn(w)
	}
}
