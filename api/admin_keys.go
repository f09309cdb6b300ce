package api

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
)

// apiKeyJSON is how the admin API shows a key: never its hash, and its raw form only in the
// answer to create (apiKeyWithSecret).
type apiKeyJSON struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Mode       bgcheck.Mode   `json:"mode"`
	Prefix     string         `json:"prefix"`
	Last4      string         `json:"last4"`
	Scopes     []string       `json:"scopes"`
	AllowedIPs []netip.Prefix `json:"allowed_ips"`
	ExpiresAt  *time.Time     `json:"expires_at"`
	LastUsedAt *time.Time     `json:"last_used_at"`
	CreatedAt  time.Time      `json:"created_at"`
}

type apiKeyWithSecret struct {
	apiKeyJSON
	Key string `json:"key"`
}

func apiKeyView(k *bgcheck.APIKey) apiKeyJSON {
	out := apiKeyJSON{
		ID: k.ID, Name: k.Name, Mode: k.Mode, Prefix: k.Prefix, Last4: k.Last4, Scopes: k.Scopes,
		AllowedIPs: k.AllowedIPs, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, CreatedAt: k.CreatedAt,
	}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if out.AllowedIPs == nil {
		out.AllowedIPs = []netip.Prefix{}
	}
	return out
}

// apiKeyRequest is the body of POST /admin/api-keys.
type apiKeyRequest struct {
	Name       *string  `json:"name"`
	Mode       *string  `json:"mode"`
	Scopes     []string `json:"scopes"`
	ExpiresAt  *string  `json:"expires_at"`
	AllowedIPs []string `json:"allowed_ips"`
}

// handleAPIKeyCreate issues a key for the admin's account by the same rules as bgcheckctl keys
// create (auth.IssueAPIKey); the raw key is in this answer and nowhere else, ever.
func (s *Server) handleAPIKeyCreate(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req apiKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	spec := auth.KeySpec{Scopes: req.Scopes, ExpiresAt: req.ExpiresAt, AllowedIPs: req.AllowedIPs}
	if req.Name != nil {
		spec.Name = *req.Name
	}
	if req.Mode != nil {
		spec.Mode = bgcheck.Mode(*req.Mode)
	}
	issued, err := auth.IssueAPIKey(spec, time.Now())
	if err != nil {
		writeError(w, r, err)
		return
	}
	key, err := s.db.CreateAPIKey(r.Context(), issued.Record(acct))
	if err != nil {
		writeError(w, r, err)
		return
	}
	requestLogger(r).Info("API key issued", "key_id", key.ID, "mode", key.Mode, "user_id", userOf(r).Subject)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, apiKeyWithSecret{apiKeyView(key), issued.Raw})
}

func (s *Server) handleAPIKeyList(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := listParams(r, bgcheck.PrefixAPIKey)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListAPIKeys(r.Context(), acct, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := bgcheck.Page[apiKeyJSON]{Data: make([]apiKeyJSON, len(page.Data)), HasMore: page.HasMore, NextCursor: page.NextCursor}
	for i, k := range page.Data {
		out.Data[i] = apiKeyView(k)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAPIKeyRevoke revokes one of the account's keys. It stops working on this instance at
// once (its cache entry goes) and on the others when their cached copy ages out, within
// auth.DefaultKeyCacheTTL. Revoking a revoked key answers 204 again.
func (s *Server) handleAPIKeyRevoke(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "keyID", bgcheck.PrefixAPIKey)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.db.RevokeAPIKey(r.Context(), acct, id); err != nil {
		writeError(w, r, err)
		return
	}
	s.keys.Forget(id)
	requestLogger(r).Info("API key revoked", "key_id", id, "user_id", userOf(r).Subject)
	w.WriteHeader(http.StatusNoContent)
}
