package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
)

// oidcConnection connects account A to a fresh provider for acme.test, with users alice (an
// employee), mallory (whose e-mail is elsewhere) and unverified.
func (s *ssoScene) oidcConnection() (*idptest.OIDCProvider, ssoConnectionJSON) {
	s.t.Helper()
	op := idptest.StartOIDC(s.t)
	op.AddUser("alice", "alice-password", "alice@acme.test", true)
	op.AddUser("mallory", "mallory-password", "mallory@elsewhere.test", true)
	op.AddUser("unverified", "unverified-password", "unverified@acme.test", false)
	c := decode[ssoConnectionJSON](s.t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "oidc", "name": "Acme IdP", "enabled": true, "jit_provisioning": true, "domains": []string{"ACME.test"},
		"oidc": map[string]any{"issuer": op.Issuer, "client_id": "bgcheck", "client_secret": "client-secret"},
	}), http.StatusCreated)
	op.AddClient("bgcheck", "client-secret", c.OIDC.RedirectURI)
	return op, s.verifyDomains(c)
}

// oidcSignIn walks a browser through sign-in at the provider and returns the last page.
func (s *ssoScene) oidcSignIn(b *idptest.Browser, email, username, password string) *idptest.Page {
	s.t.Helper()
	login := b.Get(s.t, s.startSSO(b, email))
	if login.Status != http.StatusOK || !strings.Contains(login.URL.Path, "/login/username") {
		s.t.Fatalf("expected the provider's login form, got %d at %s", login.Status, login.URL)
	}
	return b.Submit(s.t, login, map[string]string{"username": username, "password": password})
}

func TestOIDCConnectionIsConfiguredWithoutRevealingItsSecret(t *testing.T) {
	s := newSSOScene(t)
	op, c := s.oidcConnection()
	if c.Object != "sso_connection" || c.Protocol != "oidc" || !c.Enabled || !c.JITProvisioning ||
		len(c.Domains) != 1 || c.Domains[0] != "acme.test" || c.OIDC == nil || !c.OIDC.ClientSecretSet ||
		c.OIDC.RedirectURI != s.srv.URL+"/api/v1/auth/sso/oidc/"+c.ID+"/callback" || c.LastTest != nil {
		t.Fatalf("connection %+v oidc %+v", c, c.OIDC)
	}
	if r := s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil); strings.Contains(string(r.Body), "client-secret") {
		t.Fatalf("the client secret is returned: %s", r.Body)
	}
	var sealed []byte
	if err := s.db.Pool().QueryRow(t.Context(), `SELECT oidc_client_secret FROM sso_connections WHERE id = $1`, c.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || strings.Contains(string(sealed), "client-secret") {
		t.Fatalf("the client secret is not sealed at rest: %q", sealed)
	}

	// The other account sees nothing of it, and cannot claim its domain.
	wantProblem(t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminB, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "oidc", "domains": []string{"acme.test"},
		"oidc": map[string]any{"issuer": op.Issuer, "client_id": "b", "client_secret": "b-secret"},
	}), 409, bgcheck.CodeDomainTaken)
	// A second OIDC connection in one account, an issuer that is not one, plain http to a
	// public address, and a bad domain are each refused by name.
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "oidc", "domains": []string{"other.test"},
		"oidc": map[string]any{"issuer": op.Issuer, "client_id": "x", "client_secret": "y"}}), "protocol")
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "oidc", "domains": []string{"b.test"},
		"oidc": map[string]any{"issuer": s.srv.URL, "client_id": "x", "client_secret": "y"}}), "oidc.issuer")
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "oidc", "domains": []string{"b.test"},
		"oidc": map[string]any{"issuer": "http://203.0.113.9", "client_id": "x", "client_secret": "y"}}), "oidc.issuer")
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "oidc", "domains": []string{"not a domain"},
		"oidc": map[string]any{"issuer": op.Issuer, "client_id": "x", "client_secret": "y"}}), "domains")
	// A consumer's token is no admin's.
	list := decode[pageJSON[ssoConnectionJSON]](t, s.bearer("GET", "/api/v1/admin/sso/connections", s.adminB, nil), 200)
	if len(list.Data) != 0 {
		t.Fatalf("account B lists %d connections", len(list.Data))
	}
}

func TestOIDCSignInCreatesAnAdminThenFindsThemAgain(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.oidcConnection()

	// First sign-in: nobody has alice's e-mail, so she is created as an admin of account A.
	pair, claims := s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	if len(claims.AMR) != 1 || claims.AMR[0] != "sso" || claims.SSOConnection != c.ID || claims.Role != bgcheck.RoleAdmin || claims.Account != s.a.ID {
		t.Fatalf("claims %+v", claims)
	}
	me := decode[map[string]any](t, s.bearer("GET", "/api/v1/me", pair.AccessToken, nil), 200)
	if me["email"] != "alice@acme.test" || me["role"] != "admin" || me["account_id"] != s.a.ID {
		t.Fatalf("me %v", me)
	}
	decode[map[string]any](t, s.bearer("GET", "/api/v1/admin/overview", pair.AccessToken, nil), 200)

	// A second sign-in, in another browser, finds the same user by the provider's subject.
	_, again := s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	if again.Subject != claims.Subject || s.countUsers("alice@acme.test") != 1 || s.countIdentities() != 1 {
		t.Fatalf("second sign-in is user %s (first %s); %d users, %d identities", again.Subject, claims.Subject,
			s.countUsers("alice@acme.test"), s.countIdentities())
	}
	// Refreshing keeps the method and the connection.
	refreshed := decode[pairJSON](t, s.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 200)
	if _, rc := parseClaims(t, refreshed.AccessToken); len(rc.AMR) != 1 || rc.AMR[0] != "sso" || rc.SSOConnection != c.ID {
		t.Fatalf("refreshed claims %+v", rc)
	}
	got := decode[ssoConnectionJSON](t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200)
	if got.LastSignInAt == nil {
		t.Fatal("last_sign_in_at not recorded")
	}
}

func TestOIDCSignInLinksTheExistingAdmin(t *testing.T) {
	s := newSSOScene(t)
	op, _ := s.oidcConnection()
	op.AddUser("owner", "owner-idp-password", "owner@acme.test", true)
	_, claims := s.exchange(s.oidcSignIn(s.browser(), "owner@acme.test", "owner", "owner-idp-password"))
	owner, _, err := s.db.FindUserByEmail(t.Context(), "owner@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	if claims.Subject != owner.ID || s.countUsers("owner@acme.test") != 1 || s.countIdentities() != 1 {
		t.Fatalf("signed in as %s, want the existing admin %s", claims.Subject, owner.ID)
	}
}

func TestOIDCSignInRefusals(t *testing.T) {
	s := newSSOScene(t)
	op, c := s.oidcConnection()

	t.Run("wrong password at the provider", func(t *testing.T) {
		p := s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "not-her-password")
		if p.Status != http.StatusOK || !strings.Contains(p.Body, "wrong") || p.Location() != nil {
			t.Fatalf("the provider did not refuse: %d at %s %.300s", p.Status, p.URL, p.Body)
		}
		if s.countUsers("alice@acme.test") != 0 {
			t.Fatal("a user was created")
		}
	})
	t.Run("an e-mail outside the connection's domains", func(t *testing.T) {
		detail := wantRefused(t, s.oidcSignIn(s.browser(), "someone@acme.test", "mallory", "mallory-password"), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "outside this connection's verified domains") || s.countUsers("mallory@elsewhere.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
	})
	t.Run("an e-mail the provider does not vouch for", func(t *testing.T) {
		detail := wantRefused(t, s.oidcSignIn(s.browser(), "unverified@acme.test", "unverified", "unverified-password"), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "email_verified") || s.countUsers("unverified@acme.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
	})
	t.Run("an ID token changed after signing", func(t *testing.T) {
		op.TamperIDTokens(true)
		defer op.TamperIDTokens(false)
		detail := wantRefused(t, s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "ID token's signature is not valid") || s.countUsers("alice@acme.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
	})
	// The provider's own, correctly signed ID tokens that are not for this sign-in: one it
	// issued to another of its clients, one of another sign-in of ours (another nonce), and one
	// that has expired.
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) func()
		want  string
	}{
		{"an ID token issued to another client", func(t *testing.T) func() {
			op.AddClient("other-client", "other-secret", c.OIDC.RedirectURI)
			op.SwapIDTokens(op.IDToken(t, "other-client", "other-secret", c.OIDC.RedirectURI, "alice", "alice-password", "other-nonce"))
			return func() { op.SwapIDTokens("") }
		}, "issued to another client"},
		{"an ID token of another sign-in", func(t *testing.T) func() {
			op.SwapIDTokens(op.IDToken(t, "bgcheck", "client-secret", c.OIDC.RedirectURI, "alice", "alice-password", "another-nonce"))
			return func() { op.SwapIDTokens("") }
		}, "nonce is not the one this sign-in sent"},
		{"an expired ID token", func(t *testing.T) func() {
			op.ExpireIDTokens(true)
			return func() { op.ExpireIDTokens(false) }
		}, "ID token has expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.setup(t)()
			detail := wantRefused(t, s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"), 401, bgcheck.CodeSSOFailed)
			if !strings.Contains(detail, tc.want) || s.countUsers("alice@acme.test") != 0 || s.countIdentities() != 0 {
				t.Fatalf("detail %q; %d users", detail, s.countUsers("alice@acme.test"))
			}
		})
	}
	t.Run("the provider answers with an error", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			change func(authorize string) string
			want   string
		}{
			// The provider refuses a response type the client may not use, explaining why in
			// its own words (error_description).
			{"unauthorized_client", func(u string) string { return strings.Replace(u, "response_type=code", "response_type=token", 1) },
				"does not let this application use the authorization code flow"},
			// Nobody is signed in at the provider, and the request forbids it to ask.
			{"login_required", func(u string) string { return u + "&prompt=none" }, "wants the person to sign in there first"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := s.browser()
				p := b.Get(t, tc.change(s.startSSO(b, "alice@acme.test")))
				if !strings.Contains(p.URL.RawQuery, "error="+tc.name) {
					t.Fatalf("the provider answered %s", p.URL)
				}
				detail := wantRefused(t, p, 401, bgcheck.CodeSSOFailed)
				if !strings.Contains(detail, tc.want) || strings.Contains(detail, tc.name) || strings.Contains(detail, "client configuration") {
					t.Fatalf("detail %q", detail)
				}
			})
		}
		// A code nobody defined, and a description made to look like ours, end the same way:
		// our general sentence, the provider's words in the log only.
		b := s.browser()
		authorize, _ := url.Parse(s.startSSO(b, "alice@acme.test"))
		p := b.Get(t, c.OIDC.RedirectURI+"?"+url.Values{"state": {authorize.Query().Get("state")}, "error": {"made_up"},
			"error_description": {"call +1 555 0100 to unlock your account"}}.Encode())
		detail := wantRefused(t, p, 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "refused the sign-in") || strings.Contains(detail, "555") || strings.Contains(detail, "made_up") {
			t.Fatalf("detail %q", detail)
		}
		if !strings.Contains(s.logs.String(), "call +1 555 0100") {
			t.Fatal("the provider's description is not logged")
		}
	})
	t.Run("an unknown state", func(t *testing.T) {
		p := s.browser().Get(t, c.OIDC.RedirectURI+"?code=made-up&state=made-up")
		wantRefused(t, p, 401, bgcheck.CodeSSOFailed)
	})
	t.Run("a callback carried to another browser", func(t *testing.T) {
		b := s.browser()
		login := b.Get(t, s.startSSO(b, "alice@acme.test"))
		// The person signs in, but the redirect back lands in a browser without the cookie.
		stopAtCallback := idptest.NewBrowser(s.srv.URL + "/api/v1/auth/sso/")
		stopAtCallback.Client.Jar = b.Client.Jar // the provider's session cookie, not ours
		action, values := login.Form(t)
		values.Set("username", "alice")
		values.Set("password", "alice-password")
		toCallback := stopAtCallback.Post(t, action.String(), values).Location()
		if toCallback == nil {
			t.Fatal("no redirect to the callback")
		}
		detail := wantRefused(t, s.browser().Get(t, toCallback.String()), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "another browser") || s.countUsers("alice@acme.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
		// Replaying it in the right browser now fails too: the state was spent.
		wantRefused(t, b.Get(t, toCallback.String()), 401, bgcheck.CodeSSOFailed)
	})
	t.Run("a user of another account with the e-mail", func(t *testing.T) {
		s.user(s.b.ID, "bob@acme.test", bgcheck.RoleAdmin, adminPassword)
		op.AddUser("bob", "bob-password", "bob@acme.test", true)
		detail := wantRefused(t, s.oidcSignIn(s.browser(), "bob@acme.test", "bob", "bob-password"), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "not an admin of the account") || s.countIdentities() != 0 {
			t.Fatalf("detail %q", detail)
		}
	})
	t.Run("no provisioning on first sign-in", func(t *testing.T) {
		decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"jit_provisioning": false}), 200)
		defer s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"jit_provisioning": true})
		detail := wantRefused(t, s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "invite") || s.countUsers("alice@acme.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
	})
	t.Run("a disabled connection", func(t *testing.T) {
		b := s.browser()
		login := b.Get(t, s.startSSO(b, "alice@acme.test")) // started while enabled
		decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 200)
		defer s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": true})
		detail := wantRefused(t, b.Submit(t, login, map[string]string{"username": "alice", "password": "alice-password"}), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "disabled") || s.countUsers("alice@acme.test") != 0 {
			t.Fatalf("detail %q", detail)
		}
		wantProblem(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "alice@acme.test"}), 404, bgcheck.CodeSSONotConfigured)
	})
	t.Run("a used code", func(t *testing.T) {
		end := s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password")
		s.exchange(end)
		wantRefused(t, s.exchangeIn(end.Browser, s.codeFrom(end)), 401, bgcheck.CodeSSOFailed)
	})
	t.Run("a code carried to another browser", func(t *testing.T) {
		// Someone signs in at their IdP and plants the dashboard link with their code on a
		// victim: the victim's browser lacks the binding cookie, and the code dies unused.
		end := s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password")
		detail := wantRefused(t, s.exchangeIn(s.browser(), s.codeFrom(end)), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, "another browser") {
			t.Fatalf("detail %q", detail)
		}
		wantRefused(t, s.exchangeIn(end.Browser, s.codeFrom(end)), 401, bgcheck.CodeSSOFailed)
	})
	wantProblem(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "x@nowhere.test"}), 404, bgcheck.CodeSSONotConfigured)
	wantFieldError(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{}), "email")
}

// testConnection runs a connection's test in a browser, signing in at the OIDC provider as
// username, and returns the connection as it is after.
func (s *ssoScene) testConnection(c ssoConnectionJSON, username, password string) ssoConnectionJSON {
	s.t.Helper()
	b := s.browser()
	var start struct {
		RedirectURL string `json:"redirect_url"`
	}
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/api/v1/admin/sso/connections/"+c.ID+"/test", nil)
	req.Header.Set("Authorization", "Bearer "+s.adminA)
	decodeInto(s.t, b.Do(s.t, req).Body, &start)
	login := b.Get(s.t, start.RedirectURL)
	end := b.Submit(s.t, login, map[string]string{"username": username, "password": password})
	if loc := end.Location(); loc == nil || loc.Fragment != "/settings?sso_test="+c.ID {
		s.t.Fatalf("test ended at %v", end.Header.Get("Location"))
	}
	return decode[ssoConnectionJSON](s.t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200)
}

func TestOIDCConnectionTestSignsNobodyIn(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.oidcConnection()
	decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 200)
	got := s.testConnection(c, "alice", "alice-password")
	if got.LastTest == nil || !got.LastTest.OK || !strings.Contains(got.LastTest.Detail, "alice@acme.test") ||
		!strings.Contains(got.LastTest.Detail, "created") || got.LastSignInAt != nil || s.countUsers("alice@acme.test") != 0 {
		t.Fatalf("last test %+v; last sign-in %v; users %d", got.LastTest, got.LastSignInAt, s.countUsers("alice@acme.test"))
	}
}

func TestSSOEnforcementBlocksPasswordSignIn(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.oidcConnection()
	s.user(s.a.ID, "second@acme.test", bgcheck.RoleAdmin, adminPassword)
	before := s.login("second@acme.test", adminPassword) // a password sign-in made before enforcement

	// Not before a sign-in through SSO has worked.
	wantProblem(t, s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA, map[string]any{"required": true}), 409, bgcheck.CodeSSONotVerified)
	s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	// The break-glass admin must have a password: alice, created by SSO, has none.
	alice, _, _ := s.db.FindUserByEmail(t.Context(), "alice@acme.test")
	wantFieldError(t, s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA, map[string]any{"required": true, "break_glass_user_id": alice.ID}), "break_glass_user_id")
	// Without one, the admin turning it on is the break-glass admin.
	var e struct {
		Required        bool    `json:"required"`
		BreakGlass      *string `json:"break_glass_user_id"`
		BreakGlassEmail *string `json:"break_glass_email"`
		Candidates      []struct {
			ID    string `json:"id"`
			Email string `json:"email"`
		} `json:"break_glass_candidates"`
	}
	decodeInto(t, string(decode[json.RawMessage](t, s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA, map[string]any{"required": true}), 200)), &e)
	owner, _, _ := s.db.FindUserByEmail(t.Context(), "owner@acme.test")
	if !e.Required || e.BreakGlass == nil || *e.BreakGlass != owner.ID || e.BreakGlassEmail == nil || *e.BreakGlassEmail != "owner@acme.test" {
		t.Fatalf("enforcement %+v", e)
	}
	// The admins who could be the break-glass one, by e-mail: those with a password (not alice).
	if len(e.Candidates) != 2 || e.Candidates[0].Email != "owner@acme.test" || e.Candidates[0].ID != owner.ID || e.Candidates[1].Email != "second@acme.test" {
		t.Fatalf("break-glass candidates %+v", e.Candidates)
	}

	detail := wantProblem(t, s.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "second@acme.test", "password": adminPassword}), 403, bgcheck.CodeSSORequired).Detail
	if !strings.Contains(detail, "/api/v1/auth/sso/start") {
		t.Fatalf("the refusal does not name the way in: %q", detail)
	}
	// A wrong password still says only that.
	wantProblem(t, s.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "second@acme.test", "password": "wrong password!"}), 401, bgcheck.CodeInvalidCredentials)
	// The sign-in made before is refused at its next refresh.
	wantProblem(t, s.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": before.RefreshToken}), 403, bgcheck.CodeSSORequired)
	// The break-glass admin, another account's admins, and SSO itself still work.
	s.login("owner@acme.test", adminPassword)
	s.login("owner@b.test", adminPassword)
	s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	// The last connection cannot go while SSO is required.
	wantProblem(t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 409, bgcheck.CodeSSOInUse)
	wantProblem(t, s.bearer("DELETE", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 409, bgcheck.CodeSSOInUse)

	decodeInto(t, string(s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA, map[string]any{"required": false}).Body), &e)
	s.login("second@acme.test", adminPassword)
	if r := s.bearer("DELETE", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
}
