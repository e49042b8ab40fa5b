package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// auth is who may call a route.
type auth int

const (
	// public: anyone. Hosted-file reads still look at credentials for
	// private files (files.Authorize).
	public auth = iota
	// apiKey: an API key, or failing that the dashboard's session cookie (spec §5).
	apiKey
	// session: the session cookie or Authorization: Bearer <session token>.
	session
	// admin: Authorization: Bearer <DOCRENDER_ADMIN_TOKEN>. Without a
	// token these routes do not exist (404 like any unknown path).
	admin
)

// route is one entry of the API.
type route struct {
	methods []string
	path    string
	auth    auth
	handler echo.HandlerFunc
}

var (
	get     = []string{http.MethodGet}
	getHead = []string{http.MethodGet, http.MethodHead}
	post    = []string{http.MethodPost}
	patch   = []string{http.MethodPatch}
	del     = []string{http.MethodDelete}
)

// routeTable is every route of the API with who may call it; the handlers
// live in the file of their area.
//
// /api/hosted-pdfs/list and /stats are static routes, which Echo matches
// before the :pdfId parameter route, so "list" is never read as an ID.
func (s *Server) routeTable() []route {
	b := s.batches
	rs := []route{
		// Generation (spec 4.1-4.6): generate.go, batch.go, sse.go, merge.go, qrcode.go.
		{post, "/pdf/generate", apiKey, s.generate},
		{post, "/pdf/generate-batch", apiKey, b.generate},
		{get, "/pdf/progress/:batchId", apiKey, b.progress},
		{get, "/pdf/progress/:batchId/stream", apiKey, b.stream},
		{post, "/pdf/merge", apiKey, s.merge},
		{post, "/pdf/qrcode", apiKey, s.qrcode},

		// Stored files (spec 4.7-4.14): hosted.go.
		{getHead, "/pdf/view/:id", public, s.serveFile("id", "inline")},
		{getHead, "/pdf/download/:id", public, s.serveFile("id", "attachment")},
		{get, "/pdf/metadata/:id", public, s.sharedMetadata},
		{get, "/api/hosted-pdfs/list", session, s.listHosted},
		{get, "/api/hosted-pdfs/stats", session, s.hostedStats},
		{getHead, "/api/hosted-pdfs/:pdfId", public, s.serveFile("pdfId", "inline")},
		{get, "/api/hosted-pdfs/:pdfId/metadata", public, s.hostedMetadata},
		{del, "/api/hosted-pdfs/:pdfId", session, s.deleteHosted},

		// Plans and usage (spec 4.15): billing.go.
		{get, "/api/billing/usage", session, s.usage},
		{get, "/api/billing/subscription", session, s.subscription},
		{post, "/api/billing/subscription/change-plan", session, s.changePlan},

		// Accounts, sessions and keys (DESIGN §3): auth.go.
		{post, "/api/auth/register", public, s.register},
		{post, "/api/auth/login", public, s.login},
		{post, "/api/auth/logout", public, s.logout},
		{get, "/api/auth/me", session, s.me},
		{del, "/api/auth/account", session, s.deleteAccount},
		{post, "/api/keys", session, s.createKey},
		{get, "/api/keys", session, s.listKeys},
		{del, "/api/keys/:id", session, s.revokeKey},

		// The operator's account routes (DESIGN §3): admin.go.
		{get, "/api/admin/accounts", admin, s.adminListAccounts},
		{patch, "/api/admin/accounts/:id", admin, s.adminPatchAccount},

		// Probes: server.go.
		{get, "/healthz", public, s.healthz},
		{get, "/readyz", public, s.readyz},
	}
	if s.Config.MetricsAddr == "" {
		// Otherwise on its own listener (app.go), kept private by the operator.
		rs = append(rs, route{get, "/metrics", public, echo.WrapHandler(s.Metrics.Handler())})
	}
	return rs
}

// routes registers routeTable with each route's authentication.
func (s *Server) routes() {
	s.batches = newBatchAPI(s)
	guard := map[auth]echo.MiddlewareFunc{apiKey: s.requireKey, session: s.requireSession, admin: s.requireAdmin()}
	for _, r := range s.routeTable() {
		if r.auth == admin && s.Config.AdminToken == "" {
			continue
		}
		var mw []echo.MiddlewareFunc
		if g := guard[r.auth]; g != nil {
			mw = append(mw, g)
		}
		s.e.Match(r.methods, r.path, r.handler, mw...)
	}
}
