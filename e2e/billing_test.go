package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrender/docrender/gateway/server/apierr"
)

// subscription is the data of GET /api/billing/subscription.
type subscription struct {
	Plan   string `json:"plan"`
	Limits struct {
		Conversions      int64 `json:"conversions"`
		Hosted           int64 `json:"hosted"`
		RetentionSeconds int64 `json:"retentionSeconds"`
		MaxBatch         int64 `json:"maxBatch"`
	} `json:"limits"`
}

// readSubscription checks the exact shape of a subscription answer.
func readSubscription(t testing.TB, resp *http.Response) subscription {
	t.Helper()
	mustStatus(t, resp, http.StatusOK)
	var env struct {
		Success bool                       `json:"success"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(exactKeys(t, resp, "success", "data"), &env); err != nil || !env.Success {
		t.Fatalf("subscription envelope %+v, %v", env, err)
	}
	checkKeys(t, env.Data, "plan", "limits")
	var limits map[string]json.RawMessage
	_ = json.Unmarshal(env.Data["limits"], &limits)
	checkKeys(t, limits, "conversions", "hosted", "retentionSeconds", "maxBatch")
	var s subscription
	_ = json.Unmarshal(env.Data["plan"], &s.Plan)
	_ = json.Unmarshal(env.Data["limits"], &s.Limits)
	return s
}

func TestBillingUsageAndSubscription(t *testing.T) {
	svc := storageBackends(t)[0].svc
	c := newClient(t, svc)

	// Usage: exact fields, the plan limits of the configuration (limitedEnv).
	resp := c.bearer("GET", "/api/billing/usage", body{})
	mustStatus(t, resp, http.StatusOK)
	var env struct {
		Success bool                       `json:"success"`
		Data    map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(exactKeys(t, resp, "success", "data"), &env); err != nil || !env.Success {
		t.Fatal(err)
	}
	checkKeys(t, env.Data, "plan", "period", "conversionsUsed", "conversionsLimit", "hostedCount", "hostedLimit")
	u := c.billingUsage()
	want := usageData{Plan: "hobby", Period: time.Now().UTC().Format("2006-01"), ConversionsLimit: 10, HostedLimit: 2}
	if u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	c.generatePDF(hostedHTML, nil)
	c.host(hostedHTML, nil)
	if u := c.billingUsage(); u.ConversionsUsed != 2 || u.HostedCount != 1 {
		t.Fatalf("usage after two renders, one hosted: %+v", u)
	}

	// The session works as cookie and as bearer; nothing else does.
	s := readSubscription(t, c.do("GET", "/api/billing/subscription", body{}, nil))
	if s.Plan != "hobby" || s.Limits.Conversions != 10 || s.Limits.Hosted != 2 || s.Limits.RetentionSeconds != 86400 || s.Limits.MaxBatch != 10 {
		t.Fatalf("subscription %+v", s)
	}
	for _, p := range []string{"/api/billing/usage", "/api/billing/subscription"} {
		expectError(t, anon(t, "GET", svc.URL+p, nil), http.StatusUnauthorized, "")
		expectError(t, anon(t, "GET", svc.URL+p, map[string]string{"Authorization": "Bearer " + c.Key}), http.StatusUnauthorized, "")
	}
	expectError(t, anon(t, "POST", svc.URL+"/api/billing/subscription/change-plan", nil), http.StatusUnauthorized, "")
	// The keys path of spec 4.15 with the same bearer session.
	resp = c.bearer("GET", "/api/keys", body{})
	mustStatus(t, resp, http.StatusOK)
	resp.Body.Close()
}

func TestBillingChangePlan(t *testing.T) {
	svc := storageBackends(t)[0].svc
	c := newClient(t, svc)
	tests := []struct {
		name       string
		body       body
		status     int
		plan       string
		conv, host int64
		retention  int64
		batch      int64
	}{
		{"pro", jsonBody(map[string]string{"plan": "pro"}), 200, "pro", 10000, 500, 7 * 86400, 200},
		{"case-insensitive", jsonBody(map[string]string{"plan": " Enterprise "}), 200, "enterprise", 100000, 10000, 3, 5000},
		{"back to hobby", jsonBody(map[string]string{"plan": "hobby"}), 200, "hobby", 10, 2, 86400, 10},
		{"unknown plan", jsonBody(map[string]string{"plan": "gold"}), 400, "", 0, 0, 0, 0},
		{"no plan", jsonBody(map[string]string{}), 400, "", 0, 0, 0, 0},
		{"plan not a string", jsonBody(map[string]int{"plan": 1}), 400, "", 0, 0, 0, 0},
		{"not JSON", body{strings.NewReader("plan=pro"), "application/x-www-form-urlencoded"}, 400, "", 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.bearer("POST", "/api/billing/subscription/change-plan", tc.body)
			if tc.status != http.StatusOK {
				e := expectError(t, resp, tc.status, apierr.BadRequest)
				if tc.name != "not JSON" && e.Field != "plan" {
					t.Fatalf("error %+v does not name the field plan", e)
				}
				return
			}
			s := readSubscription(t, resp)
			l := s.Limits
			if s.Plan != tc.plan || l.Conversions != tc.conv || l.Hosted != tc.host || l.RetentionSeconds != tc.retention || l.MaxBatch != tc.batch {
				t.Fatalf("subscription %+v, want %s %d/%d/%d/%d", s, tc.plan, tc.conv, tc.host, tc.retention, tc.batch)
			}
			if u := c.billingUsage(); u.Plan != tc.plan || u.ConversionsLimit != tc.conv || u.HostedLimit != tc.host {
				t.Fatalf("usage after the change %+v", u)
			}
		})
	}
	// A refused change keeps the plan.
	if s := readSubscription(t, c.bearer("GET", "/api/billing/subscription", body{})); s.Plan != "hobby" {
		t.Fatalf("plan %s after refused changes, want hobby", s.Plan)
	}
}

// TestQuotaRace: 50 concurrent generate requests against a plan of 10
// conversions give exactly 10 PDFs and 40 QUOTA_EXCEEDED, on both stores.
func TestQuotaRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, svc *service) {
		c := newClient(t, svc) // hobby: 10 conversions (DOCRENDER_PLAN_HOBBY_CONVERSIONS)
		const n = 50
		statuses := make([]int, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				resp := c.generate([]file{htmlFile("index.html", hostedHTML)}, nil)
				b := readAll(t, resp)
				statuses[i] = resp.StatusCode
				switch resp.StatusCode {
				case http.StatusOK:
					if !strings.HasPrefix(string(b), "%PDF-") {
						t.Errorf("200 without a PDF: %.100q", b)
					}
				case http.StatusTooManyRequests:
					var e errorBody
					if json.Unmarshal(b, &e) != nil || e.Code != apierr.QuotaExceeded || e.StatusCode != 429 || e.Message == "" {
						t.Errorf("429 body %s", b)
					}
				default:
					t.Errorf("status %d: %s", resp.StatusCode, b)
				}
			})
		}
		close(start)
		wg.Wait()
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count[http.StatusOK] != 10 || count[http.StatusTooManyRequests] != 40 {
			t.Fatalf("statuses %v, want 10 x 200 and 40 x 429", count)
		}
		if u := c.billingUsage(); u.ConversionsUsed != 10 {
			t.Fatalf("conversionsUsed %d, want 10", u.ConversionsUsed)
		}
		// Past the limit: refused until the plan allows more.
		expectError(t, c.generate([]file{htmlFile("index.html", hostedHTML)}, nil), http.StatusTooManyRequests, apierr.QuotaExceeded)
		c.changePlan("pro")
		c.generatePDF(hostedHTML, nil)
		if u := c.billingUsage(); u.ConversionsUsed != 11 {
			t.Fatalf("conversionsUsed %d after the upgrade, want 11", u.ConversionsUsed)
		}
	})
}

// TestPlanLimitsFromEnvironment: every DOCRENDER_PLAN_* variable overrides
// its limit, the others keep the defaults of DESIGN §2.
func TestPlanLimitsFromEnvironment(t *testing.T) {
	plans, err := limitedPlans()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plan         string
		conv, hosted int64
		retention    time.Duration
		maxBatch     int
	}{
		{"hobby", 10, 2, 24 * time.Hour, 10},
		{"pro", 10000, 500, 168 * time.Hour, 200},
		{"enterprise", 100000, 10000, 3 * time.Second, 5000},
	}
	for _, tc := range tests {
		p := plans[tc.plan]
		if p.Conversions != tc.conv || p.Hosted != tc.hosted || p.Retention != tc.retention || p.MaxBatch != tc.maxBatch {
			t.Errorf("%s: %+v", tc.plan, p)
		}
	}
}

// TestReservationOfADeadGatewayIsGivenBack: a conversion reserved by a
// request whose gateway died (nothing kept it nor gave it back) comes back
// once its hold has passed: every gateway's sweeper gives back pending
// reservations, once. A reservation that was kept stays.
func TestReservationOfADeadGatewayIsGivenBack(t *testing.T) {
	svc := startService(t, func(cfg *configT) { cfg.SweepInterval = 200 * time.Millisecond })
	c := newClient(t, svc)
	acct := svc.App.Server.Accounts()
	u, err := acct.User(t.Context(), c.UserID)
	if err != nil {
		t.Fatal(err)
	}
	// As runCharged takes them; the request that took "dead" never ends.
	if _, err := acct.ReserveConversions(t.Context(), u, "job-of-a-dead-gateway", 2, time.Second, time.Hour); err != nil {
		t.Fatal(err)
	}
	kept, err := acct.ReserveConversions(t.Context(), u, "job-that-succeeded", 1, time.Second, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := acct.CommitConversions(t.Context(), kept); err != nil {
		t.Fatal(err)
	}
	if got := c.usage(); got != 3 {
		t.Fatalf("used %d, want 3 while the reservations are held", got)
	}
	eventually(t, 10*time.Second, "the dead gateway's reservation given back", func() bool { return c.usage() == 1 })
	time.Sleep(time.Second) // more sweeps give back nothing more
	if got := c.usage(); got != 1 {
		t.Fatalf("used %d after more sweeps, want 1 (the kept one)", got)
	}
}
