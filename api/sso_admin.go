package api

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/sso"
)

// maxSSODomains bounds the domains one connection owns.
const maxSSODomains = 20

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

// ssoConnectionRequest is the body of a create (every field it needs) or an update (only what
// changes).
type ssoConnectionRequest struct {
	Protocol        *string   `json:"protocol"`
	Name            *string   `json:"name"`
	Enabled         *bool     `json:"enabled"`
	JITProvisioning *bool     `json:"jit_provisioning"`
	Domains         *[]string `json:"domains"`
	OIDC            *struct {
		Issuer       *string `json:"issuer"`
		ClientID     *string `json:"client_id"`
		ClientSecret *string `json:"client_secret"`
	} `json:"oidc"`
	SAML *struct {
		MetadataXML       *string `json:"metadata_xml"`
		MetadataURL       *string `json:"metadata_url"`
		AllowIdPInitiated *bool   `json:"allow_idp_initiated"`
	} `json:"saml"`
}

// checkedSSOConnection is a request after validation: what to store.
type checkedSSOConnection struct {
	protocol bgcheck.SSOProtocol
	update   postgres.SSOConnectionUpdate
}

// checkSSOConnection validates a create (existing nil) or an update of existing. It fetches and
// parses SAML metadata and runs OIDC discovery, so a connection that cannot work is refused
// with the reason, before anything is stored.
func (s *Server) checkSSOConnection(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection) (*checkedSSOConnection, error) {
	var v validator
	out := &checkedSSOConnection{}
	u := &out.update
	switch {
	case existing != nil:
		out.protocol = existing.Protocol
		if req.Protocol != nil && *req.Protocol != string(existing.Protocol) {
			v.add("protocol", "cannot change; create another connection")
		}
	case req.Protocol == nil:
		v.add("protocol", "is required: oidc or saml")
	case *req.Protocol == string(bgcheck.SSOProtocolOIDC) || *req.Protocol == string(bgcheck.SSOProtocolSAML):
		out.protocol = bgcheck.SSOProtocol(*req.Protocol)
	default:
		v.add("protocol", "must be oidc or saml")
	}
	if req.Name != nil {
		v.maxLen("name", *req.Name, maxNameLength)
		u.Name = req.Name
	}
	u.Enabled, u.JITProvisioning = req.Enabled, req.JITProvisioning
	if req.Domains != nil {
		domains, msg := normalizeDomains(*req.Domains)
		v.check("domains", msg)
		u.Domains = &domains
	} else if existing == nil {
		v.add("domains", "is required: the e-mail domains whose users sign in through this connection")
	}
	if out.protocol == bgcheck.SSOProtocolOIDC && req.SAML != nil || out.protocol == bgcheck.SSOProtocolSAML && req.OIDC != nil {
		v.add("protocol", "an "+string(out.protocol)+" connection takes only its own settings object")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	switch out.protocol {
	case bgcheck.SSOProtocolOIDC:
		return out, s.checkOIDCSettings(ctx, req, existing, u)
	case bgcheck.SSOProtocolSAML:
		return out, s.checkSAMLSettings(ctx, req, existing, u)
	}
	return out, nil
}

func (s *Server) checkOIDCSettings(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection, u *postgres.SSOConnectionUpdate) error {
	var v validator
	if req.OIDC == nil {
		if existing == nil {
			v.add("oidc", "is required: issuer, client_id and client_secret")
		}
		return v.err()
	}
	o := req.OIDC
	if o.Issuer != nil {
		v.check("oidc.issuer", s.checkIdPURL(*o.Issuer))
	} else if existing == nil {
		v.add("oidc.issuer", "is required")
	}
	for _, f := range []struct {
		name  string
		value *string
	}{{"oidc.client_id", o.ClientID}, {"oidc.client_secret", o.ClientSecret}} {
		switch {
		case f.value == nil && existing == nil:
			v.add(f.name, "is required")
		case f.value != nil && (*f.value == "" || len(*f.value) > 1024):
			v.add(f.name, "must be 1 to 1024 characters")
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	u.OIDCIssuer, u.OIDCClientID, u.OIDCClientSecret = o.Issuer, o.ClientID, o.ClientSecret
	if o.Issuer != nil {
		if _, err := s.oidc.Discover(ctx, *o.Issuer); err != nil {
			// The library's words may quote what the address answered: logged, not echoed.
			contextLogger(ctx).Info("SSO: OIDC discovery failed", "issuer", *o.Issuer, "err", err)
			msg := "discovery failed: the issuer must serve /.well-known/openid-configuration naming itself exactly, with https endpoints"
			if sso.IsConnectionFailure(err) {
				msg = "discovery failed: the issuer could not be reached: " + sso.ConnectionProblem(err)
			}
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "oidc.issuer", Message: msg})
		}
	}
	return nil
}

func (s *Server) checkSAMLSettings(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection, u *postgres.SSOConnectionUpdate) error {
	var v validator
	if req.SAML == nil {
		if existing == nil {
			v.add("saml", "is required: metadata_xml or metadata_url")
		}
		return v.err()
	}
	m := req.SAML
	u.SAMLAllowIdPInitiated = m.AllowIdPInitiated
	switch {
	case m.MetadataXML != nil && m.MetadataURL != nil:
		return bgcheck.ValidationError(bgcheck.FieldError{Field: "saml", Message: "give metadata_xml or metadata_url, not both"})
	case m.MetadataXML == nil && m.MetadataURL == nil:
		if existing == nil {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "saml", Message: "metadata_xml or metadata_url is required"})
		}
		return nil
	}
	field, raw := "saml.metadata_xml", []byte(nil)
	if m.MetadataURL != nil {
		field = "saml.metadata_url"
		if msg := s.checkIdPURL(*m.MetadataURL); msg != "" {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: field, Message: msg})
		}
		body, err := sso.FetchMetadata(ctx, s.ssoClient, *m.MetadataURL)
		if err != nil {
			return s.metadataRefused(ctx, field, err)
		}
		raw, u.SAMLIdPMetadataURL = body, m.MetadataURL
	} else {
		raw = []byte(*m.MetadataXML)
		empty := ""
		u.SAMLIdPMetadataURL = &empty
	}
	md, err := sso.ParseIdPMetadata(raw, s.opts.SSOPrivateNetworks)
	if err == nil {
		err = md.CheckCurrent(time.Now())
	}
	if err != nil {
		return s.metadataRefused(ctx, field, err)
	}
	xml, entity := string(raw), md.EntityID
	u.SAMLIdPMetadataXML, u.SAMLIdPEntityID = &xml, &entity
	if !md.ValidUntil.IsZero() {
		u.SAMLMetadataValidUntil = &md.ValidUntil
	}
	if m.MetadataURL != nil {
		next := md.NextRefresh(time.Now())
		u.SAMLMetadataNextRefresh = &next
	}
	return nil
}

// metadataRefused is a validation error on field that says in our words why the metadata was
// refused; the libraries' words, which can name the resolver or quote the document, are logged
// with the request id.
func (s *Server) metadataRefused(ctx context.Context, field string, err error) error {
	contextLogger(ctx).Info("SSO: SAML metadata refused", "field", field, "err", err)
	return bgcheck.ValidationError(bgcheck.FieldError{Field: field, Message: sso.ReasonOf(err)})
}

// checkIdPURL accepts an https URL, or plain http only to an address in the networks the
// operator named for identity providers (BGCHECK_SSO_PRIVATE_NETWORKS): a token or assertion
// must not cross the internet in the clear.
func (s *Server) checkIdPURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "must be an absolute https URL"
	}
	if u.Scheme == "http" {
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil || !prefixesContain(s.opts.SSOPrivateNetworks, addr) {
			return "must be https (plain http only to an address in BGCHECK_SSO_PRIVATE_NETWORKS)"
		}
	}
	return ""
}

func prefixesContain(ps []netip.Prefix, addr netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// normalizeDomains lowercases and deduplicates e-mail domains and checks each is a host name
// with a dot; the message is "" when all are good.
func normalizeDomains(in []string) ([]string, string) {
	if len(in) == 0 || len(in) > maxSSODomains {
		return nil, "must list 1 to 20 e-mail domains"
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if !validDomain(d) {
			return nil, "must be e-mail domains such as example.com (" + d + " is not one)"
		}
		if publicMailDomains[d] {
			return nil, d + " is a public e-mail service: only an organization's own domain can send its users to its identity provider"
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, ""
}

// publicMailDomains are mail services anyone can have an address at: no connection may claim
// them (nor could it prove them in DNS).
var publicMailDomains = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "outlook.com": true, "hotmail.com": true, "live.com": true,
	"msn.com": true, "yahoo.com": true, "ymail.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"aol.com": true, "proton.me": true, "protonmail.com": true, "pm.me": true, "gmx.com": true, "gmx.net": true,
	"mail.com": true, "yandex.com": true, "yandex.ru": true, "zoho.com": true, "fastmail.com": true, "hey.com": true,
	"qq.com": true, "163.com": true, "web.de": true, "tutanota.com": true,
}

func validDomain(d string) bool {
	if len(d) > 253 || !strings.Contains(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
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
