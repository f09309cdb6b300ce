package api

import (
	"net/http"
	"strings"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/ratelimit"
)

// requireBearer admits requests with a valid access token (Authorization: Bearer …) of a sign-in
// that is still active, and puts its claims in the request's context. Each request is counted
// against the consumer rate limit: the user's budget once the token is verified, else the client
// address's; a spent budget is answered 429 before the authentication error.
func (s *Server) requireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoOf(r.Context())
		claims, err := s.verifyBearer(r)
		b := bucket{kind: byAddress, addr: ri.client}
		if err == nil {
			b = bucket{kind: byUser, id: claims.Subject}
		}
		if !s.takeRate(w, r, ratelimit.Consumer, b) {
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		ri.user, ri.accountID = claims, claims.Account
		next.ServeHTTP(w, r)
	})
}

func (s *Server) verifyBearer(r *http.Request) (*auth.Claims, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeMissingToken, "send your access token as Authorization: Bearer <token>")
	}
	scheme, raw, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeInvalidToken, "the Authorization header must be Bearer <token>")
	}
	claims, err := s.tokens.Parse(raw, auth.AccessToken)
	if err != nil {
		return nil, err
	}
	return s.sessions.Authorize(r.Context(), claims)
}

// userOf returns the claims of a request that passed requireBearer.
func userOf(r *http.Request) *auth.Claims { return infoOf(r.Context()).user }

// requireRole admits only portal users of the role.
func requireRole(role bgcheck.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if userOf(r).Role != role {
				writeError(w, r, bgcheck.Errorf(bgcheck.CodeForbidden, "this route is for %s users", role))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
