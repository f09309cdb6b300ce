package api

import (
	"net/http"
	"net/netip"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/ratelimit"
)

// requireAPIKey admits requests that carry a valid X-API-Key usable from the client's address,
// and puts the key in the request's context. Each request is counted against the platform rate
// limit: the key's budget once the key is verified, else the client address's, so guessing keys
// is throttled too. A spent budget is answered 429 before the authentication error, so a caller
// cannot learn whether a key is valid while refused.
func (s *Server) requireAPIKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoOf(r.Context())
		key, err := s.verifyAPIKey(r, ri.client)
		b := bucket{kind: byAddress, addr: ri.client}
		if err == nil {
			b = bucket{kind: byAPIKey, id: key.ID}
		}
		if !s.takeRate(w, r, ratelimit.Platform, b) {
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		ri.accountID, ri.apiKey = key.AccountID, key
		next.ServeHTTP(w, r)
	})
}

func (s *Server) verifyAPIKey(r *http.Request, client netip.Addr) (*bgcheck.APIKey, error) {
	raw := r.Header.Get("X-API-Key")
	if raw == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeMissingAPIKey, "send your API key in the X-API-Key header")
	}
	return s.keys.Verify(r.Context(), raw, client)
}

// apiKeyOf returns the verified key of a request that passed requireAPIKey.
func apiKeyOf(r *http.Request) *bgcheck.APIKey {
	return infoOf(r.Context()).apiKey
}

// tenantOf is the account and mode a key-authenticated request acts in.
func tenantOf(r *http.Request) bgcheck.Tenant {
	k := apiKeyOf(r)
	return bgcheck.Tenant{AccountID: k.AccountID, Mode: k.Mode}
}

// requireScope admits keys that hold scope (or have no scopes, meaning full access).
func requireScope(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !apiKeyOf(r).HasScope(scope) {
				writeError(w, r, bgcheck.Errorf(bgcheck.CodeInsufficientScope, "this key lacks the scope %s", scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
