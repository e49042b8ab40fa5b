package server

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/docrender/docrender/gateway/account"
	"github.com/docrender/docrender/pkg/invalid"
	"github.com/docrender/docrender/pkg/pdfopts"
	"github.com/docrender/docrender/pkg/signids"
)

// Signing identities (DESIGN §8) are the operator's: the names come from
// DOCRENDER_SIGNING_DIR, listed at start (config.SigningIdentities); the
// keys stay with the workers. An account signs with an identity only when
// the operator granted it (PUT /api/admin/accounts/:id/signing).

// maxGrants bounds the identities one grant may name.
const maxGrants = 100

// checkSigning is the gateway's check of a request's sign option, made
// before any work is queued: u may sign with identity, at level B-T when
// timestamp. Refusals, answered by errors.go:
//   - signing off (no DOCRENDER_SIGNING_DIR): 400 naming sign;
//   - a malformed identity name: 400 naming sign.identity;
//   - B-T without DOCRENDER_TSA_URL: 400 naming sign.level;
//   - an identity that does not exist or that u was not granted: 403
//     FORBIDDEN (*account.SigningRefusedError), the same for both, so a
//     tenant cannot probe which identities exist.
func (s *Server) checkSigning(u *account.User, identity string, timestamp bool) error {
	if s.Config.SigningDir == "" {
		return invalid.Field("sign", "signing is not configured on this server").
			WithHint("Send the request without sign, or ask the operator of this service to set up signing.")
	}
	if !signids.ValidName(identity) {
		return invalid.Field("sign.identity", "must name a signing identity (a-z, 0-9 and -, at most 64)")
	}
	if timestamp && s.Config.TSAURL == "" {
		return invalid.Field("sign.level", `"B-T" needs a time-stamp authority, and this server has none configured`).
			WithHint(`Use level "B-B".`)
	}
	if !slices.Contains(s.Config.SigningIdentities, identity) || !u.MaySign(identity) {
		return &account.SigningRefusedError{Identity: identity}
	}
	return nil
}

// adminSetSigning is PUT /api/admin/accounts/:id/signing {identities}:
// the identities the account may sign with, replacing what it had ([]
// grants none). Every name must be an identity of DOCRENDER_SIGNING_DIR;
// the answer is the account as GET /api/admin/accounts shows it.
func (s *Server) adminSetSigning(c echo.Context) error {
	var body struct {
		Identities *[]string `json:"identities"`
	}
	if err := readAdminBody(c, &body, "identities"); err != nil {
		return err
	}
	if body.Identities == nil {
		return invalid.Field("identities", `is required: the identity names the account may use ([] for none)`)
	}
	names := *body.Identities
	if err := s.checkGrant(names); err != nil {
		return err
	}
	u, err := s.adminUser(c)
	if err != nil {
		return err
	}
	before := u.SigningIdentities
	if err := s.acct.SetSigningIdentities(c.Request().Context(), u, names); err != nil {
		return err
	}
	logger(c).Info("admin: signing identities granted", "user", u.ID, "from", before, "identities", u.SigningIdentities)
	return s.adminAnswer(c, u)
}

// checkGrant refuses a grant of identities that cannot be: signing off,
// too many names, a malformed, repeated or unknown one. Each 400 names the
// field (identities[i] for one name).
func (s *Server) checkGrant(names []string) error {
	if s.Config.SigningDir == "" {
		return invalid.Field("identities", "signing is off on this server (DOCRENDER_SIGNING_DIR is not set)")
	}
	if len(names) > maxGrants {
		return invalid.Field("identities", fmt.Sprintf("at most %d identities", maxGrants))
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		field := fmt.Sprintf("identities[%d]", i)
		switch {
		case !signids.ValidName(n):
			return invalid.Field(field, "an identity name is 1 to 64 of a-z, 0-9 and -")
		case seen[n]:
			return invalid.Field(field, fmt.Sprintf("%q is named twice", n))
		case !slices.Contains(s.Config.SigningIdentities, n):
			return invalid.Field(field, fmt.Sprintf("%q is not a signing identity of this server", n)).
				WithHint("Identities in DOCRENDER_SIGNING_DIR: " + listNames(s.Config.SigningIdentities, 20) + ".")
		}
		seen[n] = true
	}
	return nil
}

// listNames is names joined: the first most of them and how many more.
func listNames(names []string, most int) string {
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// readAdminBody decodes an admin route's JSON object into v; a field other
// than allowed is a 400 naming it rather than a change silently not made
// ("disable": true, say).
func readAdminBody(c echo.Context, v any, allowed ...string) error {
	ct := strings.ToLower(c.Request().Header.Get(echo.HeaderContentType))
	if !strings.HasPrefix(ct, "application/json") {
		return invalid.Input("Expected a JSON body (Content-Type: application/json).")
	}
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	unknown, err := pdfopts.UnknownField(data, allowed)
	if err != nil {
		return err
	}
	if unknown != "" {
		return invalid.Field(unknown, "unknown field; send "+strings.Join(allowed, " and/or "))
	}
	return pdfopts.Decode(data, v)
}
