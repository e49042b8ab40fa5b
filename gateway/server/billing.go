package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/config"
	"github.com/docrender/docrender/pkg/usage"
)

type usageData struct {
	Plan             string `json:"plan"`
	Period           string `json:"period"`
	ConversionsUsed  int64  `json:"conversionsUsed"`
	ConversionsLimit int64  `json:"conversionsLimit"`
	HostedCount      int64  `json:"hostedCount"`
	HostedLimit      int64  `json:"hostedLimit"`
}

// usage is GET /api/billing/usage.
func (s *Server) usage(c echo.Context) error {
	ctx := c.Request().Context()
	u := currentUser(c)
	plan := s.acct.Plan(u.Plan)
	used, err := s.acct.ConversionsUsed(ctx, u)
	if err != nil {
		return err
	}
	hosted, err := s.files.HostedCount(ctx, u.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": usageData{
		Plan: plan.Name, Period: usage.Period(time.Now()), ConversionsUsed: used,
		ConversionsLimit: plan.Conversions, HostedCount: hosted, HostedLimit: plan.Hosted,
	}})
}

type planLimits struct {
	Conversions      int64 `json:"conversions"`
	Hosted           int64 `json:"hosted"`
	RetentionSeconds int64 `json:"retentionSeconds"`
	MaxBatch         int   `json:"maxBatch"`
}

func subscriptionJSON(p config.Plan) map[string]any {
	return map[string]any{"success": true, "data": map[string]any{
		"plan": p.Name,
		"limits": planLimits{
			Conversions: p.Conversions, Hosted: p.Hosted,
			RetentionSeconds: int64(p.Retention / time.Second), MaxBatch: p.MaxBatch,
		},
	}}
}

// subscription is GET /api/billing/subscription.
func (s *Server) subscription(c echo.Context) error {
	return c.JSON(http.StatusOK, subscriptionJSON(s.acct.Plan(currentUser(c).Plan)))
}

// changePlan is POST /api/billing/subscription/change-plan {plan}: to a
// plan of DOCRENDER_SELF_SERVICE_PLANS only (403 otherwise; the operator
// sets any plan with the admin API). The new limits apply to the next
// reservation: a larger hosted limit frees hosting at once; files already
// stored keep their expiry.
func (s *Server) changePlan(c echo.Context) error {
	var body struct {
		Plan string `json:"plan"`
	}
	if err := readJSON(c, &body); err != nil {
		return err
	}
	u := currentUser(c)
	old := u.Plan
	if err := s.acct.ChoosePlan(c.Request().Context(), u, body.Plan); err != nil {
		return err
	}
	logger(c).Info("plan changed", "user", u.ID, "from", old, "to", u.Plan)
	return c.JSON(http.StatusOK, subscriptionJSON(s.acct.Plan(u.Plan)))
}
