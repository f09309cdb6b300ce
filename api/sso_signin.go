package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/oauth2"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/sso"
)

const (
	// ssoStateTTL is how long a sign-in may spend at the identity provider.
	ssoStateTTL = 10 * time.Minute
	// ssoGrantTTL is how long the dashboard has to trade a finished sign-in's code for tokens.
	ssoGrantTTL = 2 * time.Minute
	// ssoBindingCookie ties a sign-in's state to the browser that started it, so a callback
	// URL or SAML response carried to another browser signs nobody in there.
	ssoBindingCookie = "bgcheck_sso"
)

// ssoSignInRoutes are the sign-in side of SSO, under /api/v1/auth/sso.
func (s *Server) ssoSignInRoutes(r chi.Router) {
	r.Post("/start", s.handleSSOStart)
	r.Post("/exchange", s.handleSSOExchange)
	r.Get("/oidc/{connectionID}/callback", s.handleOIDCCallback)
	r.Post("/saml/{connectionID}/acs", s.handleSAMLACS)
	r.Get("/saml/{connectionID}/metadata", s.handleSAMLMetadata)
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashToken(t string) []byte {
	h := sha256.Sum256([]byte(t))
	return h[:]
}

// handleSSOStart is the e-mail-first step of sign-in: the e-mail's domain names the connection,
// and the answer is where to send the browser.
func (s *Server) handleSSOStart(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Email *string `json:"email"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Email == nil || *req.Email == "" {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "email", Message: "is required"}))
		return
	}
	if msg := checkEmail(*req.Email); msg != "" {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "email", Message: msg}))
		return
	}
	c, err := s.db.FindSSOConnectionByDomain(r.Context(), emailDomain(*req.Email))
	if err == nil && !c.Enabled {
		err = bgcheck.ErrNotFound
	}
	if bgcheck.ErrorCode(err) == bgcheck.CodeNotFound {
		err = bgcheck.Errorf(bgcheck.CodeSSONotConfigured, "no single sign-on is set up for %s: sign in with your password", emailDomain(*req.Email))
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	redirect, err := s.beginSSO(w, r, c, postgres.SSOPurposeSignIn)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"redirect_url": redirect, "connection_id": c.ID, "protocol": string(c.Protocol)})
}

// emailDomain is what follows the last @ of an e-mail, lowercased.
func emailDomain(email string) string {
	return strings.ToLower(email[strings.LastIndex(email, "@")+1:])
}

// beginSSO stores a new sign-in's state, sets the cookie that binds it to this browser and
// returns the identity provider's URL to send the browser to.
func (s *Server) beginSSO(w http.ResponseWriter, r *http.Request, c *bgcheck.SSOConnection, purpose string) (string, error) {
	state, binding := randomToken(), randomToken()
	st := postgres.SSOLoginState{StateHash: hashToken(state), BindingHash: hashToken(binding), ConnectionID: c.ID,
		Purpose: purpose, ExpiresAt: time.Now().Add(ssoStateTTL)}
	var redirect string
	switch c.Protocol {
	case bgcheck.SSOProtocolOIDC:
		st.Nonce, st.PKCEVerifier = randomToken(), oauth2.GenerateVerifier()
		u, err := s.oidc.AuthCodeURL(r.Context(), s.oidcConfig(c, ""), state, st.Nonce, st.PKCEVerifier)
		if err != nil {
			return "", s.unavailable(r, c, err)
		}
		redirect = u
	case bgcheck.SSOProtocolSAML:
		sp, err := s.samlFor(c)
		if err != nil {
			return "", s.unavailable(r, c, err)
		}
		if redirect, st.SAMLRequestID, err = sp.AuthnRequestURL(state); err != nil {
			return "", err
		}
	}
	if err := s.db.CreateSSOLoginState(r.Context(), st); err != nil {
		return "", err
	}
	// The IdP posts a SAML response from its own site: a Lax cookie would stay behind.
	s.setBindingCookie(w, binding, ssoStateTTL, c.Protocol == bgcheck.SSOProtocolSAML)
	return redirect, nil
}

// setBindingCookie sets (or, with ttl 0, clears) the cookie that ties a sign-in to this browser.
// It is sent only to the SSO routes, never to scripts.
func (s *Server) setBindingCookie(w http.ResponseWriter, value string, ttl time.Duration, crossSitePost bool) {
	secure := strings.HasPrefix(s.opts.PublicURL, "https://")
	cookie := &http.Cookie{Name: ssoBindingCookie, Value: value, Path: "/api/v1/auth/sso/",
		MaxAge: int(ttl.Seconds()), HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
	if ttl == 0 {
		cookie.MaxAge = -1
	}
	if secure && crossSitePost {
		cookie.SameSite = http.SameSiteNoneMode
	}
	http.SetCookie(w, cookie)
}

// unavailable turns a connection that cannot start a sign-in (its IdP unreachable, its
// metadata expired) into sso_unavailable: the fault is the connection's, not the caller's
// credentials, so it must not read as a 401 that signs a dashboard out.
func (s *Server) unavailable(r *http.Request, c *bgcheck.SSOConnection, err error) error {
	var e *bgcheck.Error
	if !errors.As(err, &e) || e.Code != bgcheck.CodeSSOFailed {
		return err
	}
	requestLogger(r).Warn("SSO: cannot start a sign-in", "connection_id", c.ID, "err", err)
	return &bgcheck.Error{Code: bgcheck.CodeSSOUnavailable, Detail: e.Detail}
}

func (s *Server) oidcConfig(c *bgcheck.SSOConnection, secret string) sso.OIDCConfig {
	return sso.OIDCConfig{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: secret,
		RedirectURL: s.ssoURL(c.ID, "oidc/callback")}
}

// samlFor builds a connection's service provider from its stored IdP metadata. A sign-in never
// fetches metadata: the worker refreshes metadata from a URL in the background, and the stored
// copy serves until its validUntil.
func (s *Server) samlFor(c *bgcheck.SSOConnection) (*sso.SAML, error) {
	md, err := sso.ParseIdPMetadata([]byte(c.SAMLIdPMetadataXML), s.opts.SSOPrivateNetworks)
	if err == nil {
		err = md.CheckCurrent(time.Now())
	}
	if err != nil {
		detail := "the connection's IdP metadata cannot be used (" + sso.ReasonOf(err) + "): an admin must give current metadata"
		if c.SAMLMetadataRefreshError != nil {
			detail += "; the last attempt to fetch it again failed: " + *c.SAMLMetadataRefreshError
		}
		return nil, &sso.Refusal{Err: &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: detail}, Cause: err}
	}
	return sso.NewSAML(sso.SAMLConfig{EntityID: s.ssoURL(c.ID, "saml/metadata"), ACSURL: s.ssoURL(c.ID, "saml/acs"),
		MetadataURL: s.ssoURL(c.ID, "saml/metadata"), IdP: md, AllowIdPInitiated: c.SAMLAllowIdPInitiated})
}

func (s *Server) bindingHash(r *http.Request) []byte {
	c, err := r.Cookie(ssoBindingCookie)
	if err != nil {
		return hashToken("") // matches no stored binding: the sign-in was started elsewhere
	}
	return hashToken(c.Value)
}

// handleOIDCCallback is where the IdP sends the browser back with an authorization code.
func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	connID := chi.URLParam(r, "connectionID")
	q := r.URL.Query()
	c, err := s.db.FindSSOConnectionByID(r.Context(), connID)
	if err == nil && c.Protocol != bgcheck.SSOProtocolOIDC {
		err = bgcheck.ErrNotFound
	}
	if err != nil {
		s.ssoFailed(w, r, nil, "", err)
		return
	}
	st, err := s.db.ConsumeSSOLoginState(r.Context(), hashToken(q.Get("state")), s.bindingHash(r), connID)
	if err != nil {
		s.ssoFailed(w, r, c, "", err)
		return
	}
	if e := q.Get("error"); e != "" {
		// The provider's own words, which anyone crafting the redirect can choose, go to the log.
		requestLogger(r).Info("SSO: the identity provider answered with an error", "connection_id", c.ID,
			"error", e, "error_description", q.Get("error_description"), "error_uri", q.Get("error_uri"))
		s.ssoFailed(w, r, c, st.Purpose, &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: sso.AuthorizationError(e)})
		return
	}
	secret, err := s.db.OpenOIDCClientSecret(r.Context(), c.ID)
	if err != nil {
		s.ssoFailed(w, r, c, st.Purpose, err)
		return
	}
	id, err := s.oidc.Exchange(r.Context(), s.oidcConfig(c, secret), q.Get("code"), st.PKCEVerifier, st.Nonce)
	if err != nil {
		s.ssoFailed(w, r, c, st.Purpose, err)
		return
	}
	s.finishSSO(w, r, c, st.Purpose, id)
}

// handleSAMLACS receives the IdP's SAML response (HTTP-POST binding). A RelayState names the
// sign-in it answers. A response that answers no request (no InResponseTo) is IdP-initiated,
// accepted only where the connection allows it; its RelayState, if the IdP sent one, is the
// IdP's own (often a target URL) and is ignored: the person lands on the dashboard.
func (s *Server) handleSAMLACS(w http.ResponseWriter, r *http.Request) {
	connID := chi.URLParam(r, "connectionID")
	// Base64, then form encoding (which triples "+", "/" and "="), of the largest response read.
	r.Body = http.MaxBytesReader(w, r.Body, 4*sso.MaxResponseBytes)
	if err := r.ParseForm(); err != nil {
		s.ssoFailed(w, r, nil, "", &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "the SAML POST could not be read as a form"})
		return
	}
	c, err := s.db.FindSSOConnectionByID(r.Context(), connID)
	if err == nil && c.Protocol != bgcheck.SSOProtocolSAML {
		err = bgcheck.ErrNotFound
	}
	if err != nil {
		s.ssoFailed(w, r, nil, "", err)
		return
	}
	purpose, requestIDs := postgres.SSOPurposeSignIn, []string(nil)
	relay, unsolicited := r.PostForm.Get("RelayState"), sso.Unsolicited(r.PostForm.Get("SAMLResponse"))
	switch {
	case unsolicited && c.SAMLAllowIdPInitiated:
		if relay != "" {
			requestLogger(r).Info("SSO: ignoring the RelayState of an IdP-initiated SAML response", "connection_id", c.ID)
		}
	case unsolicited && relay == "":
		s.ssoFailed(w, r, c, "", &bgcheck.Error{Code: bgcheck.CodeSSOFailed,
			Detail: "IdP-initiated sign-in is off for this connection: start from the sign-in page"})
		return
	default:
		st, err := s.db.ConsumeSSOLoginState(r.Context(), hashToken(relay), s.bindingHash(r), connID)
		if err != nil {
			s.ssoFailed(w, r, c, "", err)
			return
		}
		purpose, requestIDs = st.Purpose, []string{st.SAMLRequestID}
	}
	sp, err := s.samlFor(c)
	if err != nil {
		s.ssoFailed(w, r, c, purpose, err)
		return
	}
	a, err := sp.ParseResponse(r.PostForm.Get("SAMLResponse"), requestIDs, time.Now())
	if err == nil {
		err = s.db.RecordSAMLAssertion(r.Context(), c.ID, a.ID, a.Until)
	}
	if err != nil {
		s.ssoFailed(w, r, c, purpose, err)
		return
	}
	s.finishSSO(w, r, c, purpose, a.Identity)
}

// handleSAMLMetadata serves our service provider's metadata for a SAML connection, for the IdP's
// administrator to load.
func (s *Server) handleSAMLMetadata(w http.ResponseWriter, r *http.Request) {
	c, err := s.db.FindSSOConnectionByID(r.Context(), chi.URLParam(r, "connectionID"))
	if err == nil && c.Protocol != bgcheck.SSOProtocolSAML {
		err = bgcheck.ErrNotFound
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	sp, err := sso.NewSAML(sso.SAMLConfig{EntityID: s.ssoURL(c.ID, "saml/metadata"), ACSURL: s.ssoURL(c.ID, "saml/acs"),
		MetadataURL: s.ssoURL(c.ID, "saml/metadata")})
	var body []byte
	if err == nil {
		body, err = sp.Metadata()
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	_, _ = w.Write(body)
}

// finishSSO decides what a verified identity may do. Its e-mail must be verified and in one of
// the connection's domains. A test records the outcome and signs nobody in; a sign-in finds,
// links or creates the admin and hands the dashboard a one-time code.
func (s *Server) finishSSO(w http.ResponseWriter, r *http.Request, c *bgcheck.SSOConnection, purpose string, id bgcheck.SSOIdentity) {
	// A test may run before the domains are proven in DNS, to check the IdP's side first.
	if err := checkSSOIdentity(c, id, purpose == postgres.SSOPurposeTest); err != nil {
		s.ssoFailed(w, r, c, purpose, err)
		return
	}
	log := requestLogger(r).With("connection_id", c.ID)
	if purpose == postgres.SSOPurposeTest {
		detail, how := "the identity provider signed in "+id.Email+" (subject "+id.Subject+")", "pending"
		if c.VerifiedDomain(emailDomain(id.Email)) {
			var err error
			if how, err = s.db.PreviewSSOSignIn(r.Context(), c, id); err != nil {
				s.ssoFailed(w, r, c, purpose, err)
				return
			}
			detail += "; " + previewText[how]
		} else {
			// What a sign-in would do depends on who has the e-mail: that is told only about a
			// domain the account has proven it holds.
			detail += "; who they would be is shown once " + emailDomain(id.Email) +
				" is verified (publish its TXT record), and nobody signs in through it until then"
		}
		if err := s.db.RecordSSOTest(r.Context(), c.ID, how != "refused", detail); err != nil {
			writeError(w, r, err)
			return
		}
		log.Info("SSO connection tested", "outcome", how)
		http.Redirect(w, r, s.dashboardURL("#/settings?sso_test="+url.QueryEscape(c.ID)), http.StatusSeeOther)
		return
	}
	if !c.Enabled {
		s.ssoFailed(w, r, c, purpose, &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "this SSO connection is disabled"})
		return
	}
	res, err := s.db.SignInWithSSO(r.Context(), c, id)
	if err != nil {
		s.ssoFailed(w, r, c, purpose, err)
		return
	}
	// The code is good only with a new binding cookie, set on this answer: a code carried to
	// another browser (a link planted by someone who signed in at their own IdP) is refused.
	code, binding := randomToken(), randomToken()
	if err := s.db.CreateSSOGrant(r.Context(), hashToken(code), hashToken(binding), res.User.ID, c.ID, time.Now().Add(ssoGrantTTL)); err != nil {
		writeError(w, r, err)
		return
	}
	s.setBindingCookie(w, binding, ssoGrantTTL, false)
	log.Info("SSO sign-in", "user_id", res.User.ID, "how", res.How)
	http.Redirect(w, r, s.dashboardURL("#/sso?code="+url.QueryEscape(code)), http.StatusSeeOther)
}

var previewText = map[string]string{
	"identity": "they have signed in through this connection before and would again",
	"linked":   "the admin with this e-mail would be linked to this identity",
	"created":  "a new admin would be created with this e-mail on first sign-in",
	"refused":  "they would be refused: they are not an admin of this account and cannot become one by signing in",
}

// checkSSOIdentity refuses an identity whose e-mail the connection may not vouch for: one in a
// domain it has not verified (or, with pending, not even claimed).
func checkSSOIdentity(c *bgcheck.SSOConnection, id bgcheck.SSOIdentity, pending bool) error {
	switch {
	case id.Email == "":
		return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "the identity provider sent no e-mail address: map one (email) in its settings"}
	case checkEmail(id.Email) != "":
		return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "the identity provider sent an e-mail address that is not one"}
	case !id.EmailVerified:
		return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "the identity provider does not vouch for the e-mail " + id.Email + " (email_verified is false)"}
	case pending && slices.Contains(c.Domains, emailDomain(id.Email)):
		return nil
	case !c.VerifiedDomain(emailDomain(id.Email)):
		return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: "the e-mail " + id.Email + " is outside this connection's verified domains (" +
			strings.Join(c.VerifiedDomains(), ", ") + ")"}
	}
	return nil
}

func (s *Server) dashboardURL(fragment string) string {
	return strings.TrimRight(s.opts.PublicURL, "/") + "/dashboard/" + fragment
}

// ssoFailed answers a refused sign-in: a browser that navigated here is sent to the dashboard,
// which shows the reason; any other client gets problem+json. A test's failure is recorded on
// the connection too.
func (s *Server) ssoFailed(w http.ResponseWriter, r *http.Request, c *bgcheck.SSOConnection, purpose string, err error) {
	var e *bgcheck.Error
	ok := errors.As(err, &e)
	if c != nil && purpose == postgres.SSOPurposeTest && ok {
		if rerr := s.db.RecordSSOTest(r.Context(), c.ID, false, e.Detail); rerr != nil {
			requestLogger(r).Error("SSO: recording a failed test", "err", rerr)
		}
	}
	if ok {
		// err may carry the protocol library's words (sso.Refusal): the log keeps them.
		requestLogger(r).Info("SSO sign-in refused", "code", e.Code, "err", err)
	}
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && ok {
		target := "#/signin?sso_error=" + url.QueryEscape(e.Detail)
		if c != nil && purpose == postgres.SSOPurposeTest {
			target = "#/settings?sso_test=" + url.QueryEscape(c.ID)
		}
		http.Redirect(w, r, s.dashboardURL(target), http.StatusSeeOther)
		return
	}
	writeError(w, r, err)
}

// handleSSOExchange trades the one-time code of a finished SSO sign-in for the usual tokens,
// whose amr is ["sso"] and sso_conn the connection. The browser must send the binding cookie
// the sign-in's last redirect set.
func (s *Server) handleSSOExchange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code *string `json:"code"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Code == nil || *req.Code == "" {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "code", Message: "is required"}))
		return
	}
	user, conn, err := s.db.UseSSOGrant(r.Context(), hashToken(*req.Code), s.bindingHash(r))
	s.setBindingCookie(w, "", 0, false)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pair, err := s.newSession(r.Context(), user, auth.Subject{Method: auth.MethodSSO, SSOConnection: conn})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, pair)
}
