package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/internal/dev/eventcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// ssoScene is an API whose public URL is its own address (so IdPs can send browsers back),
// with account A (domain acme.test) and account B, each with a password admin.
type ssoScene struct {
	*env
	dns            *idptest.DNS // where the domains' TXT records are published
	a, b           account
	adminA, adminB string // access tokens
}

func newSSOScene(t *testing.T) *ssoScene {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.NewTokens(signingKey)
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.NewDB(t)
	t.Cleanup(func() { eventcheck.ValidateStored(t, db.Pool()) })
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	keys := auth.NewVerifier(db, 0, log)
	dns := idptest.StartDNS(t)
	handler := api.New(db, keys, api.Options{Logger: log, Tokens: tokens, PublicURL: "http://" + ln.Addr().String(),
		SSOPrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Resolver: dns.Resolver()}).Handler()
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	srv.Start()
	t.Cleanup(srv.Close)
	e := &env{t: t, db: db, keys: keys, srv: srv, logs: logs}
	s := &ssoScene{env: e, dns: dns, a: e.newAccount(), b: e.newAccount()}
	// Each account's only admins are the ones named here: the harness's first admin (at
	// example.com) would stand in the way of requiring SSO.
	if _, err := db.Pool().Exec(t.Context(), `DELETE FROM users WHERE account_id IN ($1, $2)`, s.a.ID, s.b.ID); err != nil {
		t.Fatal(err)
	}
	e.user(s.a.ID, "owner@acme.test", bgcheck.RoleAdmin, adminPassword)
	e.user(s.b.ID, "owner@b.test", bgcheck.RoleAdmin, adminPassword)
	s.adminA = e.login("owner@acme.test", adminPassword).AccessToken
	s.adminB = e.login("owner@b.test", adminPassword).AccessToken
	return s
}

type ssoConnectionJSON struct {
	ID                 string   `json:"id"`
	Object             string   `json:"object"`
	Protocol           string   `json:"protocol"`
	Name               string   `json:"name"`
	Enabled            bool     `json:"enabled"`
	JITProvisioning    bool     `json:"jit_provisioning"`
	Domains            []string `json:"domains"`
	LastSignInAt       *string  `json:"last_sign_in_at"`
	DomainVerification []struct {
		Domain      string `json:"domain"`
		Status      string `json:"status"`
		RecordType  string `json:"record_type"`
		RecordName  string `json:"record_name"`
		RecordValue string `json:"record_value"`
	} `json:"domain_verification"`
	OIDC *struct {
		Issuer          string `json:"issuer"`
		ClientID        string `json:"client_id"`
		ClientSecretSet bool   `json:"client_secret_set"`
		RedirectURI     string `json:"redirect_uri"`
	} `json:"oidc"`
	SAML *struct {
		IdPEntityID       string  `json:"idp_entity_id"`
		MetadataURL       *string `json:"metadata_url"`
		AllowIdPInitiated bool    `json:"allow_idp_initiated"`
		SPEntityID        string  `json:"sp_entity_id"`
		ACSURL            string  `json:"acs_url"`
		SPMetadataURL     string  `json:"sp_metadata_url"`
		// MetadataNextRefreshAt and MetadataRefreshError are the background refresh's.
		MetadataNextRefreshAt *time.Time `json:"metadata_next_refresh_at"`
		MetadataRefreshError  *struct {
			At     time.Time `json:"at"`
			Detail string    `json:"detail"`
		} `json:"metadata_refresh_error"`
	} `json:"saml"`
	LastTest *struct {
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"last_test"`
}

// browser returns a person's browser that stops at the dashboard a sign-in returns to.
func (s *ssoScene) browser() *idptest.Browser { return idptest.NewBrowser(s.srv.URL + "/dashboard/") }

// startSSO posts the e-mail-first step from the browser and returns where it must go.
func (s *ssoScene) startSSO(b *idptest.Browser, email string) string {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/api/v1/auth/sso/start",
		strings.NewReader(`{"email":"`+email+`"}`))
	req.Header.Set("Content-Type", "application/json")
	p := b.Do(s.t, req)
	if p.Status != http.StatusOK {
		s.t.Fatalf("sso start for %s: %d %s", email, p.Status, p.Body)
	}
	var out struct {
		RedirectURL string `json:"redirect_url"`
	}
	decodeInto(s.t, p.Body, &out)
	return out.RedirectURL
}

// codeFrom reads the one-time code of a finished sign-in from the dashboard redirect it ended
// on; it fails the test if the sign-in ended any other way.
func (s *ssoScene) codeFrom(p *idptest.Page) string {
	s.t.Helper()
	loc := p.Location()
	if p.Status != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.Fragment, "/sso?") {
		s.t.Fatalf("sign-in did not end on the dashboard: %d %s at %s; %.400s", p.Status, p.Header.Get("Location"), p.URL, p.Body)
	}
	q, _ := url.ParseQuery(strings.TrimPrefix(loc.Fragment, "/sso?"))
	return q.Get("code")
}

// exchange trades the code a sign-in ended with for tokens, from the browser it ended in (as
// the dashboard does), and returns their claims too.
func (s *ssoScene) exchange(end *idptest.Page) (pairJSON, *auth.Claims) {
	s.t.Helper()
	p := s.exchangeIn(end.Browser, s.codeFrom(end))
	pair := decode[pairJSON](s.t, &response{Status: p.Status, Header: p.Header, Body: []byte(p.Body)}, 200)
	_, claims := parseClaims(s.t, pair.AccessToken)
	return pair, claims
}

// exchangeIn posts a code to the exchange from browser b.
func (s *ssoScene) exchangeIn(b *idptest.Browser, code string) *idptest.Page {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/api/v1/auth/sso/exchange", strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Content-Type", "application/json")
	return b.Do(s.t, req)
}

// verifyDomains publishes the TXT record of each of the connection's pending domains and has
// the API verify them.
func (s *ssoScene) verifyDomains(c ssoConnectionJSON) ssoConnectionJSON {
	s.t.Helper()
	for _, d := range c.DomainVerification {
		s.dns.Publish(d.RecordName, d.RecordValue)
	}
	c = decode[ssoConnectionJSON](s.t, s.bearer("POST", "/api/v1/admin/sso/connections/"+c.ID+"/verify-domains", s.adminA, nil), 200)
	for _, d := range c.DomainVerification {
		if d.Status != "verified" {
			s.t.Fatalf("domain %s still %s", d.Domain, d.Status)
		}
	}
	return c
}

// wantRefused asserts a page is the API's problem+json refusal of a sign-in and returns its
// detail.
func wantRefused(t *testing.T, p *idptest.Page, status int, code bgcheck.Code) string {
	t.Helper()
	r := &response{Status: p.Status, Header: p.Header, Body: []byte(p.Body)}
	return wantProblem(t, r, status, code).Detail
}

func (s *ssoScene) countUsers(email string) int {
	s.t.Helper()
	var n int
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM users WHERE lower(email) = lower($1)`, email).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *ssoScene) countIdentities() int {
	s.t.Helper()
	var n int
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM sso_identities`).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func decodeInto(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %T from %.300s: %v", v, body, err)
	}
}

// parseClaims reads a token's claims without checking it (the test trusts its own server).
func parseClaims(t testing.TB, token string) (string, *auth.Claims) {
	t.Helper()
	var claims auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Subject, &claims
}
