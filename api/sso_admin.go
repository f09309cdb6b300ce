package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

// ssoAdminRoutes are Settings → SSO: an account's connections and its requirement.
func (s *Server) ssoAdminRoutes(r chi.Router) {
	r.Get("/connections", s.handleSSOConnectionList)
	r.Post("/connections", s.handleSSOConnectionCreate)
	r.Get("/connections/{connectionID}", s.handleSSOConnectionGet)
	r.Patch("/connections/{connectionID}", s.handleSSOConnectionUpdate)
	r.Delete("/connections/{connectionID}", s.handleSSOConnectionDelete)
	r.Post("/connections/{connectionID}/test", s.handleSSOConnectionTest)
	r.Post("/connections/{connectionID}/verify-domains", s.handleSSODomainsVerify)
	r.Get("/enforcement", s.handleSSOEnforcementGet)
	r.Patch("/enforcement", s.handleSSOEnforcementUpdate)
}

// ssoConnectionJSON is a connection as admins see it: the OIDC client secret only as "set", and
// our own values (redirect URI; SP entity id, ACS URL and metadata URL) to copy into the IdP.
type ssoConnectionJSON struct {
	Object string `json:"object"`
	*bgcheck.SSOConnection
	DomainVerification []domainVerificationJSON `json:"domain_verification"`
	OIDC               *oidcJSON                `json:"oidc,omitempty"`
	SAML               *samlJSON                `json:"saml,omitempty"`
	LastTest           *lastTestJSON            `json:"last_test"`
}

// domainVerificationJSON is one claimed domain: verified, or the TXT record that proves it.
type domainVerificationJSON struct {
	Domain      string     `json:"domain"`
	Status      string     `json:"status"` // "verified" or "pending"
	VerifiedAt  *time.Time `json:"verified_at"`
	RecordType  string     `json:"record_type"`
	RecordName  string     `json:"record_name"`
	RecordValue string     `json:"record_value"`
}

type oidcJSON struct {
	Issuer          string `json:"issuer"`
	ClientID        string `json:"client_id"`
	ClientSecretSet bool   `json:"client_secret_set"`
	RedirectURI     string `json:"redirect_uri"`
}

type samlJSON struct {
	IdPEntityID        string     `json:"idp_entity_id"`
	MetadataURL        *string    `json:"metadata_url"`
	MetadataFetchedAt  *time.Time `json:"metadata_fetched_at"`
	MetadataValidUntil *time.Time `json:"metadata_valid_until"`
	// MetadataNextRefresh is when metadata from a URL is next fetched in the background, and
	// MetadataRefreshError what the last attempt said, until one succeeds.
	MetadataNextRefresh  *time.Time        `json:"metadata_next_refresh_at"`
	MetadataRefreshError *refreshErrorJSON `json:"metadata_refresh_error"`
	AllowIdPInitiated    bool              `json:"allow_idp_initiated"`
	SPEntityID           string            `json:"sp_entity_id"`
	ACSURL               string            `json:"acs_url"`
	SPMetadataURL        string            `json:"sp_metadata_url"`
}

type refreshErrorJSON struct {
	At     time.Time `json:"at"`
	Detail string    `json:"detail"`
}

type lastTestJSON struct {
	At     time.Time `json:"at"`
	OK     bool      `json:"ok"`
	Detail string    `json:"detail"`
}

func (s *Server) ssoConnectionView(c *bgcheck.SSOConnection) ssoConnectionJSON {
	out := ssoConnectionJSON{Object: "sso_connection", SSOConnection: c}
	if c.Domains == nil {
		c.Domains = []string{}
	}
	out.DomainVerification = make([]domainVerificationJSON, len(c.DomainClaims))
	for i, d := range c.DomainClaims {
		v := domainVerificationJSON{Domain: d.Domain, Status: "pending", VerifiedAt: d.VerifiedAt, RecordType: "TXT",
			RecordName: bgcheck.SSODomainRecordName(d.Domain), RecordValue: bgcheck.SSODomainRecordValue(d.Token)}
		if d.VerifiedAt != nil {
			v.Status = "verified"
		}
		out.DomainVerification[i] = v
	}
	switch c.Protocol {
	case bgcheck.SSOProtocolOIDC:
		out.OIDC = &oidcJSON{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecretSet: c.OIDCClientSecretSet,
			RedirectURI: s.ssoURL(c.ID, "oidc/callback")}
	case bgcheck.SSOProtocolSAML:
		out.SAML = &samlJSON{IdPEntityID: c.SAMLIdPEntityID, MetadataFetchedAt: c.SAMLMetadataFetchedAt,
			MetadataValidUntil: c.SAMLMetadataValidTill, AllowIdPInitiated: c.SAMLAllowIdPInitiated,
			SPEntityID: s.ssoURL(c.ID, "saml/metadata"), ACSURL: s.ssoURL(c.ID, "saml/acs"),
			SPMetadataURL: s.ssoURL(c.ID, "saml/metadata")}
		if c.SAMLIdPMetadataURL != "" {
			out.SAML.MetadataURL = &c.SAMLIdPMetadataURL
			out.SAML.MetadataNextRefresh = c.SAMLMetadataNextRefresh
		}
		if c.SAMLMetadataRefreshFailedAt != nil && c.SAMLMetadataRefreshError != nil {
			out.SAML.MetadataRefreshError = &refreshErrorJSON{At: *c.SAMLMetadataRefreshFailedAt, Detail: *c.SAMLMetadataRefreshError}
		}
	}
	if c.LastTestAt != nil && c.LastTestOK != nil {
		detail := ""
		if c.LastTestDetail != nil {
			detail = *c.LastTestDetail
		}
		out.LastTest = &lastTestJSON{At: *c.LastTestAt, OK: *c.LastTestOK, Detail: detail}
	}
	return out
}

// ssoURL is one of a connection's protocol URLs: /api/v1/auth/sso/{protocol}/{id}/{what}.
func (s *Server) ssoURL(connectionID, path string) string {
	protocol, what, _ := strings.Cut(path, "/")
	return strings.TrimRight(s.opts.PublicURL, "/") + "/api/v1/auth/sso/" + protocol + "/" + url.PathEscape(connectionID) + "/" + what
}

func (s *Server) handleSSOConnectionList(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	list, err := s.db.ListSSOConnections(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	data := make([]ssoConnectionJSON, len(list))
	for i, c := range list {
		data[i] = s.ssoConnectionView(c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false})
}

func (s *Server) handleSSOConnectionGet(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindSSOConnection(r.Context(), acct, chi.URLParam(r, "connectionID"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.ssoConnectionView(c))
}

func (s *Server) handleSSOConnectionCreate(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req ssoConnectionRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	checked, err := s.checkSSOConnection(r.Context(), &req, nil)
	if err != nil {
		writeError(w, r, err)
		return
	}
	u := checked.update
	n := postgres.NewSSOConnection{AccountID: acct, Protocol: checked.protocol, Domains: *u.Domains,
		SAMLMetadataValidUntil: u.SAMLMetadataValidUntil, SAMLMetadataNextRefresh: u.SAMLMetadataNextRefresh}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&n.Name, u.Name}, {&n.OIDCIssuer, u.OIDCIssuer}, {&n.OIDCClientID, u.OIDCClientID}, {&n.OIDCClientSecret, u.OIDCClientSecret},
		{&n.SAMLIdPEntityID, u.SAMLIdPEntityID}, {&n.SAMLIdPMetadataXML, u.SAMLIdPMetadataXML}, {&n.SAMLIdPMetadataURL, u.SAMLIdPMetadataURL}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	for _, f := range []struct {
		dst *bool
		src *bool
	}{{&n.Enabled, u.Enabled}, {&n.JITProvisioning, u.JITProvisioning}, {&n.SAMLAllowIdPInitiated, u.SAMLAllowIdPInitiated}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	c, err := s.db.CreateSSOConnection(r.Context(), n)
	if err != nil {
		writeError(w, r, err)
		return
	}
	requestLogger(r).Info("SSO connection created", "connection_id", c.ID, "protocol", c.Protocol)
	writeJSON(w, http.StatusCreated, s.ssoConnectionView(c))
}

func (s *Server) handleSSOConnectionUpdate(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	existing, err := s.db.FindSSOConnection(r.Context(), acct, chi.URLParam(r, "connectionID"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req ssoConnectionRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	checked, err := s.checkSSOConnection(r.Context(), &req, existing)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.UpdateSSOConnection(r.Context(), acct, existing.ID, checked.update)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.ssoConnectionView(c))
}

func (s *Server) handleSSOConnectionDelete(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.db.DeleteSSOConnection(r.Context(), acct, chi.URLParam(r, "connectionID")); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleSSOConnectionTest starts a sign-in through the connection, enabled or not, whose end
// records what the IdP said and which user it would be, and signs nobody in.
func (s *Server) handleSSOConnectionTest(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindSSOConnection(r.Context(), acct, chi.URLParam(r, "connectionID"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	redirect, err := s.beginSSO(w, r, c, postgres.SSOPurposeTest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"redirect_url": redirect, "connection_id": c.ID, "protocol": string(c.Protocol)})
}

// handleSSODomainsVerify looks up the TXT record of each pending domain of the connection and
// verifies those whose record holds their token. It answers the connection; a domain whose
// record is missing stays pending, and the answer says which.
func (s *Server) handleSSODomainsVerify(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindSSOConnection(r.Context(), acct, chi.URLParam(r, "connectionID"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, d := range c.DomainClaims {
		if d.VerifiedAt != nil || !s.domainRecordPublished(r, d) {
			continue
		}
		if err := s.db.VerifySSODomain(r.Context(), c.ID, d.Domain); err != nil {
			writeError(w, r, err)
			return
		}
		requestLogger(r).Info("SSO domain verified", "connection_id", c.ID, "domain", d.Domain)
	}
	if c, err = s.db.FindSSOConnection(r.Context(), acct, c.ID); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.ssoConnectionView(c))
}

// domainRecordPublished reports whether the domain's challenge TXT record holds the claim's
// token. A lookup that fails (no such name, a resolver error) is a no.
func (s *Server) domainRecordPublished(r *http.Request, d bgcheck.SSODomain) bool {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	records, err := s.opts.Resolver.LookupTXT(ctx, bgcheck.SSODomainRecordName(d.Domain))
	if err != nil {
		requestLogger(r).Info("SSO domain record not found", "domain", d.Domain, "err", err)
		return false
	}
	want := bgcheck.SSODomainRecordValue(d.Token)
	for _, rec := range records {
		if strings.TrimSpace(rec) == want {
			return true
		}
	}
	return false
}

// ssoEnforcementJSON is the account's requirement, with the break-glass admin's e-mail and the
// admins who could be it (those with a password), for the dashboard's picker.
type ssoEnforcementJSON struct {
	*bgcheck.SSOEnforcement
	BreakGlassEmail *string                           `json:"break_glass_email"`
	Candidates      []postgres.SSOBreakGlassCandidate `json:"break_glass_candidates"`
}

func (s *Server) handleSSOEnforcementGet(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	e, err := s.db.FindSSOEnforcement(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	candidates, err := s.db.ListSSOBreakGlassCandidates(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := ssoEnforcementJSON{SSOEnforcement: e, Candidates: candidates}
	if out.Candidates == nil {
		out.Candidates = []postgres.SSOBreakGlassCandidate{}
	}
	for _, c := range candidates {
		if e.BreakGlassUserID != nil && c.ID == *e.BreakGlassUserID {
			out.BreakGlassEmail = &c.Email
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleSSOEnforcementUpdate turns the requirement on or off. Turning it on without naming a
// break-glass admin names the caller.
func (s *Server) handleSSOEnforcementUpdate(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req struct {
		Required         *bool   `json:"required"`
		BreakGlassUserID *string `json:"break_glass_user_id"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	e, err := s.db.FindSSOEnforcement(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if req.Required != nil {
		e.Required = *req.Required
	}
	if req.BreakGlassUserID != nil {
		e.BreakGlassUserID = req.BreakGlassUserID
	}
	if e.Required && e.BreakGlassUserID == nil {
		caller := userOf(r).Subject
		e.BreakGlassUserID = &caller
	}
	if err := s.db.SetSSOEnforcement(r.Context(), acct, *e); err != nil {
		writeError(w, r, err)
		return
	}
	requestLogger(r).Info("SSO requirement changed", "required", e.Required)
	s.handleSSOEnforcementGet(w, r)
}
