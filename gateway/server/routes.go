package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/pkg/pdfopts"
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
	// keyOrSession: an API key (X-API-Key, or Authorization: Bearer with a
	// key), else a session: the cookie or Authorization: Bearer <session
	// token> (DESIGN §9's template routes).
	keyOrSession
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
	// renders: the request holds one of the account's in-flight slots
	// (DOCRENDER_PLAN_<PLAN>_CONCURRENCY) while it runs.
	renders bool
}

var (
	get     = []string{http.MethodGet}
	getHead = []string{http.MethodGet, http.MethodHead}
	post    = []string{http.MethodPost}
	patch   = []string{http.MethodPatch}
	put     = []string{http.MethodPut}
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
		// Every keyed request counts against the account's rate. Routes that
		// create work take an Idempotency-Key (idempotent.go).
		{post, "/pdf/generate", apiKey, s.idempotent(s.generate), true},
		{post, "/pdf/generate-batch", apiKey, s.idempotent(b.generate), true},
		{get, "/pdf/progress/:batchId", apiKey, b.progress, false},
		{get, "/pdf/progress/:batchId/stream", apiKey, b.stream, false},
		{post, "/pdf/merge", apiKey, s.idempotent(s.merge), true},
		{post, "/pdf/qrcode", apiKey, s.qrcode, false},
		// Documents of record (DESIGN §8): inspect.go.
		{post, "/pdf/inspect", apiKey, s.inspect, true},
		// Screenshots and Markdown (DESIGN §11): screenshot.go.
		{post, "/pdf/screenshot", apiKey, s.screenshot, true},
		{post, "/pdf/markdown", apiKey, s.markdown, true},
		{post, "/pdf/office", apiKey, s.office, true},
		// PDF tools (DESIGN §11): tools.go, appended below.

		// Stored files (spec 4.7-4.14): hosted.go.
		{getHead, "/pdf/view/:id", public, s.serveFile("id", "inline"), false},
		{getHead, "/pdf/download/:id", public, s.serveFile("id", "attachment"), false},
		{get, "/pdf/metadata/:id", public, s.sharedMetadata, false},
		{get, "/api/hosted-pdfs/list", session, s.listHosted, false},
		{get, "/api/hosted-pdfs/stats", session, s.hostedStats, false},
		{getHead, "/api/hosted-pdfs/:pdfId", public, s.serveFile("pdfId", "inline"), false},
		{get, "/api/hosted-pdfs/:pdfId/metadata", public, s.hostedMetadata, false},
		{del, "/api/hosted-pdfs/:pdfId", session, s.deleteHosted, false},

		// Stored templates (DESIGN §9): templates.go. The preview,
		// GET /api/templates/:id/preview, renders (the render path's).
		{post, "/api/templates", keyOrSession, s.uploadTemplate, false},
		{get, "/api/templates", keyOrSession, s.listTemplates, false},
		{get, "/api/templates/:id", keyOrSession, s.getTemplate, false},
		{del, "/api/templates/:id", keyOrSession, s.deleteTemplate, false},
		{get, "/api/templates/:id/preview", keyOrSession, s.templatePreview, true},

		// Plans and usage (spec 4.15): billing.go.
		{get, "/api/billing/usage", session, s.usage, false},
		{get, "/api/billing/subscription", session, s.subscription, false},
		{post, "/api/billing/subscription/change-plan", session, s.changePlan, false},

		// Accounts, sessions and keys (DESIGN §3): auth.go.
		{post, "/api/auth/register", public, s.register, false},
		{post, "/api/auth/login", public, s.login, false},
		{post, "/api/auth/logout", public, s.logout, false},
		{get, "/api/auth/me", session, s.me, false},
		{del, "/api/auth/account", session, s.deleteAccount, false},
		{post, "/api/keys", session, s.createKey, false},
		{get, "/api/keys", session, s.listKeys, false},
		{del, "/api/keys/:id", session, s.revokeKey, false},

		// The operator's account routes (DESIGN §3): admin.go.
		{get, "/api/admin/accounts", admin, s.adminListAccounts, false},
		{patch, "/api/admin/accounts/:id", admin, s.adminPatchAccount, false},
		// Signing grants (DESIGN §8): signing.go.
		{put, "/api/admin/accounts/:id/signing", admin, s.adminSetSigning, false},

		// Probes: server.go.
		{get, "/healthz", public, s.healthz, false},
		{get, "/readyz", public, s.readyz, false},
	}
	for _, op := range pdfopts.ToolOps() {
		rs = append(rs, route{post, "/pdf/" + op, apiKey, s.tool(op), true})
	}
	if s.Config.MetricsAddr == "" {
		// Otherwise on its own listener (app.go), kept private by the operator.
		rs = append(rs, route{get, "/metrics", public, echo.WrapHandler(s.Metrics.Handler()), false})
	}
	return rs
}

// routes registers routeTable with each route's authentication.
func (s *Server) routes() {
	s.batches = newBatchAPI(s)
	guard := map[auth]echo.MiddlewareFunc{apiKey: s.requireKey, keyOrSession: s.requireKeyOrSession,
		session: s.requireSession, admin: s.requireAdmin()}
	for _, r := range s.routeTable() {
		if r.auth == admin && s.Config.AdminToken == "" {
			continue
		}
		var mw []echo.MiddlewareFunc
		if g := guard[r.auth]; g != nil {
			mw = append(mw, g)
		}
		if r.auth == apiKey || r.auth == keyOrSession {
			mw = append(mw, s.limitAccount(r.renders))
		}
		s.e.Match(r.methods, r.path, r.handler, mw...)
	}
	s.apiDocs() // GET /openapi.json and /docs (apidocs.go)
}
