package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/gateway/server/apierr"
	"github.com/docrender/docrender/pkg/apitime"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/state"
)

const sessionCookie = "docrender_session"

// Context keys.
const (
	ctxUser = "user"
	ctxKey  = "apikey"
)

func currentUser(c echo.Context) *account.User {
	u, _ := c.Get(ctxUser).(*account.User)
	return u
}

func bearer(c echo.Context) string {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// apiKeyFrom reads the key from X-API-Key or Authorization: Bearer.
func apiKeyFrom(c echo.Context) (string, bool) {
	if k := c.Request().Header.Get("X-API-Key"); k != "" {
		return strings.TrimSpace(k), true
	}
	if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
		if b := bearer(c); b != "" {
			return b, true
		}
		// Another scheme (Basic, say) is a malformed key, not a missing one.
		return h, true
	}
	return "", false
}

// sessionUser resolves the bearer token or session cookie; nil if none.
// A state-changing request signed in by the cookie must come from the
// service's own origin (edge.go).
func (s *Server) sessionUser(c echo.Context, allowBearer bool) (*account.User, string, error) {
	tok := ""
	if allowBearer {
		tok = bearer(c)
	}
	if ck, err := c.Cookie(sessionCookie); tok == "" && err == nil && ck.Value != "" {
		if err := s.checkCookieOrigin(c); err != nil {
			return nil, "", err
		}
		tok = ck.Value
	}
	if tok == "" {
		return nil, "", nil
	}
	u, err := s.acct.Session(c.Request().Context(), tok)
	if errors.Is(err, state.ErrNotFound) {
		return nil, tok, apierr.Unauth("Session expired or invalid. Sign in again.")
	}
	return u, tok, err
}

// requireKey authenticates generation endpoints (spec §5): an API key, or
// failing that the dashboard's session cookie.
func (s *Server) requireKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		secret, given := apiKeyFrom(c)
		if !given {
			u, _, err := s.sessionUser(c, false)
			if err == nil && u != nil {
				c.Set(ctxUser, u)
				return next(c)
			}
			if forbidden(err) || errors.Is(err, account.ErrDisabled) {
				// A cross-site cookie, or a disabled account's session:
				// say so, not "API key required".
				return err
			}
		}
		u, k, err := s.acct.Authenticate(c.Request().Context(), secret)
		if err != nil {
			return err
		}
		c.Set(ctxUser, u)
		c.Set(ctxKey, k)
		return next(c)
	}
}

// requireKeyOrSession authenticates routes open to programs and to the
// dashboard alike: an API key as requireKey takes it, or a session as
// requireSession does (the bearer token included). An Authorization:
// Bearer value of a key's form is a key; any other is a session token.
func (s *Server) requireKeyOrSession(next echo.HandlerFunc) echo.HandlerFunc {
	keyed := s.requireKey(next)
	return func(c echo.Context) error {
		if c.Request().Header.Get("X-API-Key") != "" || account.WellFormedKey(bearer(c)) {
			return keyed(c)
		}
		if bearer(c) != "" {
			u, _, err := s.sessionUser(c, true)
			if err != nil {
				return err
			}
			c.Set(ctxUser, u)
			return next(c)
		}
		return keyed(c) // the cookie, or "API key required"
	}
}

// requireSession authenticates /api routes: the session cookie or bearer token.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, _, err := s.sessionUser(c, true)
		if err != nil {
			return err
		}
		if u == nil {
			return apierr.Unauth("Sign in required: send the session cookie or Authorization: Bearer <session token>.")
		}
		c.Set(ctxUser, u)
		return next(c)
	}
}

// readJSON decodes a JSON request body into v with 400s naming bad fields.
func readJSON(c echo.Context, v any) error {
	ct := strings.ToLower(c.Request().Header.Get(echo.HeaderContentType))
	if !strings.HasPrefix(ct, "application/json") {
		return apierr.Bad("Expected a JSON body (Content-Type: application/json).")
	}
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	return pdfopts.Decode(data, v)
}

// forbidden reports whether err is a 403 (a cross-site cookie request).
func forbidden(err error) bool {
	var ae *apierr.Error
	return errors.As(err, &ae) && ae.Status == http.StatusForbidden
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func userJSON(u *account.User) map[string]any {
	return map[string]any{"id": u.ID, "email": u.Email, "plan": u.Plan, "createdAt": apitime.Format(u.CreatedAt)}
}

func (s *Server) startSession(c echo.Context, u *account.User, status int) error {
	tok, err := s.acct.NewSession(c.Request().Context(), u)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(s.Config.BaseURL, "https://"), MaxAge: int(account.SessionTTL.Seconds()),
	})
	return c.JSON(status, map[string]any{"success": true, "data": map[string]any{"user": userJSON(u), "token": tok}})
}

func (s *Server) register(c echo.Context) error {
	var cr credentials
	if err := readJSON(c, &cr); err != nil {
		return err
	}
	at, err := s.startAuthAttempt(c, cr.Email)
	if err != nil {
		return err
	}
	u, err := s.acct.Register(c.Request().Context(), cr.Email, cr.Password)
	at.done(c.Request().Context(), err == nil)
	if err != nil {
		return err
	}
	return s.startSession(c, u, http.StatusCreated)
}

func (s *Server) login(c echo.Context) error {
	var cr credentials
	if err := readJSON(c, &cr); err != nil {
		return err
	}
	at, err := s.startAuthAttempt(c, cr.Email)
	if err != nil {
		return err
	}
	u, err := s.acct.Login(c.Request().Context(), cr.Email, cr.Password)
	at.done(c.Request().Context(), err == nil)
	if err != nil {
		return err
	}
	return s.startSession(c, u, http.StatusOK)
}

func (s *Server) logout(c echo.Context) error {
	_, tok, err := s.sessionUser(c, true)
	if forbidden(err) {
		return err
	}
	if tok != "" {
		if err := s.acct.EndSession(c.Request().Context(), tok); err != nil {
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, MaxAge: -1})
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "Signed out."})
}

func (s *Server) me(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": map[string]any{"user": userJSON(currentUser(c))}})
}

func (s *Server) deleteAccount(c echo.Context) error {
	if err := s.acct.DeleteUser(c.Request().Context(), currentUser(c)); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "Account deleted."})
}

func keyJSON(k *account.Key) map[string]any {
	m := map[string]any{"id": k.ID, "name": k.Name, "prefix": k.Prefix, "createdAt": apitime.Format(k.CreatedAt), "expiresAt": nil}
	if k.ExpiresAt != nil {
		m["expiresAt"] = apitime.Format(*k.ExpiresAt)
	}
	return m
}

func (s *Server) createKey(c echo.Context) error {
	var body struct {
		Name      string `json:"name"`
		ExpiresAt string `json:"expiresAt"`
	}
	if c.Request().ContentLength != 0 {
		if err := readJSON(c, &body); err != nil {
			return err
		}
	}
	var exp *time.Time
	if body.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, body.ExpiresAt)
		if err != nil {
			return apierr.Invalid("expiresAt", "must be an ISO 8601 timestamp such as 2030-01-01T00:00:00Z")
		}
		exp = &t
	}
	k, secret, err := s.acct.CreateKey(c.Request().Context(), currentUser(c), body.Name, exp)
	if err != nil {
		return err
	}
	data := keyJSON(k)
	data["key"] = secret
	return c.JSON(http.StatusCreated, map[string]any{"success": true, "data": data})
}

func (s *Server) listKeys(c echo.Context) error {
	keys, err := s.acct.Keys(c.Request().Context(), currentUser(c))
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = keyJSON(k)
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "data": out})
}

func (s *Server) revokeKey(c echo.Context) error {
	if err := s.acct.RevokeKey(c.Request().Context(), currentUser(c), c.Param("id")); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "API key revoked."})
}
