package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
)

var signingKey = []byte("test signing key of at least thirty-two bytes")

type pairJSON struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
}

// mailbox records the sign-in links the API sends.
type mailbox struct {
	mu    sync.Mutex
	links map[string][]string
}

func (m *mailbox) SendMagicLink(_ context.Context, to, link string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links[to] = append(m.links[to], link)
	return nil
}

func (m *mailbox) tokenFor(t *testing.T, to string) string {
	t.Helper()
	var link string
	waitUntil(t, 5*time.Second, "a sign-in link is sent to "+to, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		if n := len(m.links[to]); n > 0 {
			link = m.links[to][n-1]
			return true
		}
		return false
	})
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, "https://portal.example.com/magic-link?token=") {
		t.Fatalf("link %q", link)
	}
	return u.Query().Get("token")
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newPortalEnv starts a server that signs tokens with signingKey and mails into a mailbox;
// opts, when given, sets the other options.
func newPortalEnv(t *testing.T, opts ...api.Options) (*env, *mailbox) {
	tokens, err := auth.NewTokens(signingKey)
	if err != nil {
		t.Fatal(err)
	}
	box := &mailbox{links: map[string][]string{}}
	var o api.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Tokens, o.Mailer, o.PortalURL = tokens, box, "https://portal.example.com"
	return newEnv(t, o), box
}

// bearer sends a request with an access token.
func (e *env) bearer(method, path, token string, body any) *response {
	e.t.Helper()
	return e.doWith(method, path, body, map[string]string{"Authorization": "Bearer " + token})
}

// user creates a portal user with a password; accountID "" makes a consumer of no account.
func (e *env) user(accountID, email string, role bgcheck.Role, password string) *bgcheck.User {
	e.t.Helper()
	hash, err := auth.HashPassword(password)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.db.CreateUser(context.Background(), postgres.NewUser{AccountID: accountID, Email: email, Role: role, PasswordHash: hash})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

func (e *env) login(email, password string) pairJSON {
	e.t.Helper()
	return decode[pairJSON](e.t, e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": email, "password": password}), 200)
}

func TestRegisterLoginMe(t *testing.T) {
	e, _ := newPortalEnv(t)
	pair := decode[pairJSON](t, e.do("POST", "/api/v1/auth/register", "", map[string]any{
		"email": "Jane@Example.com", "password": "a long password", "name": "Jane"}), http.StatusCreated)
	if pair.TokenType != "Bearer" || pair.ExpiresIn != 900 || pair.RefreshExpiresIn != 604800 || pair.AccessToken == "" || pair.RefreshToken == "" {
		t.Fatalf("pair %+v", pair)
	}
	me := decode[map[string]any](t, e.bearer("GET", "/api/v1/me", pair.AccessToken, nil), 200)
	if me["email"] != "Jane@Example.com" || me["role"] != "consumer" || me["name"] != "Jane" || me["account_id"] != nil {
		t.Fatalf("me %v", me)
	}
	again := e.login("jane@example.com", "a long password") // e-mail matched in any case
	if again.AccessToken == pair.AccessToken {
		t.Fatal("two sign-ins share a token")
	}

	wantProblem(t, e.do("POST", "/api/v1/auth/register", "", map[string]any{"email": "JANE@example.com", "password": "another password"}), 409, bgcheck.CodeEmailTaken)
	wantFieldError(t, e.do("POST", "/api/v1/auth/register", "", map[string]any{"email": "x@example.com", "password": "short"}), "password")
	wantFieldError(t, e.do("POST", "/api/v1/auth/register", "", map[string]any{"email": "not-mail", "password": "a long password"}), "email")
	wantProblem(t, e.do("POST", "/api/v1/auth/register", "", `{"email":"y@example.com","password":"a long password","role":"admin"}`), 400, bgcheck.CodeMalformedJSON)
}

// Unknown e-mail and wrong password get the same answer (only the request id differs).
func TestLoginFailuresAreIndistinguishable(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")
	e.login("admin@acme.test", "correct horse battery")
	wrong := wantProblem(t, e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "admin@acme.test", "password": "wrong password"}), 401, bgcheck.CodeInvalidCredentials)
	unknown := wantProblem(t, e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "nobody@acme.test", "password": "wrong password"}), 401, bgcheck.CodeInvalidCredentials)
	wrong.RequestID, unknown.RequestID = "", ""
	if wrong.Detail != unknown.Detail || wrong.Title != unknown.Title {
		t.Fatalf("answers differ:\n%+v\n%+v", wrong, unknown)
	}
	wantFieldError(t, e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "admin@acme.test"}), "password")
}

func TestBearerTokenChecks(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	admin := e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")
	pair := e.login("admin@acme.test", "correct horse battery")
	claims := func(mut func(c jwt.MapClaims)) jwt.MapClaims {
		now := time.Now()
		c := jwt.MapClaims{"iss": "bgcheck", "aud": []string{"bgcheck-portal"}, "sub": admin.ID, "acct": a.ID, "role": "admin",
			"typ": "access", "sid": "ses_x", "jti": "j1", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	sign := func(method jwt.SigningMethod, key any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(method, c)
		tok.Header["kid"] = auth.KeyID(signingKey)
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	parts := strings.Split(pair.AccessToken, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"admin"`, `"root!"`, 1))) + "." + parts[2]
	none := sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil))

	cases := []struct {
		name   string
		header string
		code   bgcheck.Code
	}{
		{"no header", "", bgcheck.CodeMissingToken},
		{"not bearer", "Basic YWRtaW46cGFzcw==", bgcheck.CodeInvalidToken},
		{"garbage", "Bearer not.a.jwt", bgcheck.CodeInvalidToken},
		{"tampered payload", "Bearer " + tampered, bgcheck.CodeInvalidToken},
		{"alg none", "Bearer " + none, bgcheck.CodeInvalidToken},
		{"wrong key", "Bearer " + sign(jwt.SigningMethodHS256, []byte("another key that is long enough, 32+"), claims(nil)), bgcheck.CodeInvalidToken},
		{"HS512", "Bearer " + sign(jwt.SigningMethodHS512, signingKey, claims(nil)), bgcheck.CodeInvalidToken},
		{"expired", "Bearer " + sign(jwt.SigningMethodHS256, signingKey, claims(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = time.Now().Add(-time.Hour).Unix(), time.Now().Add(-time.Minute).Unix()
		})), bgcheck.CodeTokenExpired},
		{"no expiry", "Bearer " + sign(jwt.SigningMethodHS256, signingKey, claims(func(c jwt.MapClaims) { delete(c, "exp") })), bgcheck.CodeInvalidToken},
		{"wrong issuer", "Bearer " + sign(jwt.SigningMethodHS256, signingKey, claims(func(c jwt.MapClaims) { c["iss"] = "evil" })), bgcheck.CodeInvalidToken},
		{"wrong audience", "Bearer " + sign(jwt.SigningMethodHS256, signingKey, claims(func(c jwt.MapClaims) { c["aud"] = "other" })), bgcheck.CodeInvalidToken},
		{"refresh used as access", "Bearer " + pair.RefreshToken, bgcheck.CodeInvalidToken},
		{"unknown session", "Bearer " + sign(jwt.SigningMethodHS256, signingKey, claims(nil)), bgcheck.CodeInvalidToken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.doWith("GET", "/api/v1/me", nil, map[string]string{"Authorization": c.header})
			wantProblem(t, r, 401, c.code)
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// An access token is not a refresh token either.
	wantProblem(t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.AccessToken}), 401, bgcheck.CodeInvalidToken)
	decode[map[string]any](t, e.bearer("GET", "/api/v1/me", pair.AccessToken, nil), 200)
}

// Refresh rotates; replaying a retired refresh token revokes every token of that sign-in.
func TestRefreshRotationAndReuseDetection(t *testing.T) {
	e, _ := newPortalEnv(t)
	e.user("", "c@example.com", bgcheck.RoleConsumer, "correct horse battery")
	first := e.login("c@example.com", "correct horse battery")
	other := e.login("c@example.com", "correct horse battery") // another sign-in, unaffected

	second := decode[pairJSON](t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": first.RefreshToken}), 200)
	third := decode[pairJSON](t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": second.RefreshToken}), 200)
	decode[map[string]any](t, e.bearer("GET", "/api/v1/me", third.AccessToken, nil), 200)

	wantProblem(t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": first.RefreshToken}), 401, bgcheck.CodeRefreshTokenReused)
	wantProblem(t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": third.RefreshToken}), 401, bgcheck.CodeInvalidToken)
	waitUntil(t, time.Second, "the revoked sign-in's access token is refused", func() bool {
		return e.bearer("GET", "/api/v1/me", third.AccessToken, nil).Status == 401
	})
	decode[map[string]any](t, e.bearer("GET", "/api/v1/me", other.AccessToken, nil), 200)
	decode[pairJSON](t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": other.RefreshToken}), 200)
}

func TestConcurrentRefreshesOfOneTokenLetOneThrough(t *testing.T) {
	e, _ := newPortalEnv(t)
	e.user("", "c@example.com", bgcheck.RoleConsumer, "correct horse battery")
	pair := e.login("c@example.com", "correct horse battery")
	var ok, reused atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch r := e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}); r.Status {
			case 200:
				ok.Add(1)
			case 401:
				reused.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || reused.Load() != 9 {
		t.Fatalf("%d refreshes succeeded, %d refused; want 1 and 9", ok.Load(), reused.Load())
	}
}

func TestLogoutRevokesTheSignIn(t *testing.T) {
	e, _ := newPortalEnv(t)
	e.user("", "c@example.com", bgcheck.RoleConsumer, "correct horse battery")
	pair := e.login("c@example.com", "correct horse battery")
	if r := e.bearer("POST", "/api/v1/auth/logout", pair.AccessToken, nil); r.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	wantProblem(t, e.bearer("GET", "/api/v1/me", pair.AccessToken, nil), 401, bgcheck.CodeInvalidToken)
	wantProblem(t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 401, bgcheck.CodeInvalidToken)
	wantProblem(t, e.do("POST", "/api/v1/auth/logout", "", nil), 401, bgcheck.CodeMissingToken)
}

func TestMagicLinks(t *testing.T) {
	e, box := newPortalEnv(t)
	a := e.newAccount()
	consumer := e.user("", "c@example.com", bgcheck.RoleConsumer, "correct horse battery")
	e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")

	// The same answer whoever asks.
	for _, email := range []string{"c@example.com", "nobody@example.com", "admin@acme.test"} {
		r := e.do("POST", "/api/v1/auth/magic-link/request", "", map[string]any{"email": email})
		if r.Status != http.StatusAccepted || strings.TrimSpace(string(r.Body)) != "{}" {
			t.Fatalf("%s: %d %s", email, r.Status, r.Body)
		}
	}
	token := box.tokenFor(t, "c@example.com")
	if raw, err := base64.RawURLEncoding.DecodeString(token); err != nil || len(raw) < 32 {
		t.Fatalf("token %q does not carry 256 bits", token)
	}
	pair := decode[pairJSON](t, e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": token}), 200)
	me := decode[map[string]any](t, e.bearer("GET", "/api/v1/me", pair.AccessToken, nil), 200)
	if me["id"] != consumer.ID {
		t.Fatalf("signed in as %v", me["id"])
	}
	wantProblem(t, e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": token}), 401, bgcheck.CodeInvalidMagicLink)
	wantProblem(t, e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": "made-up"}), 401, bgcheck.CodeInvalidMagicLink)
	box.mu.Lock()
	sentToOthers := len(box.links["nobody@example.com"]) + len(box.links["admin@acme.test"])
	box.mu.Unlock()
	if sentToOthers != 0 {
		t.Fatal("a link went to someone who is not a consumer")
	}
	var stored int
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM magic_links WHERE token_hash = $1::bytea`, []byte(token)).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("the raw token is stored (%d, %v)", stored, err)
	}

	// An expired link fails.
	e.do("POST", "/api/v1/auth/magic-link/request", "", map[string]any{"email": "c@example.com"})
	waitUntil(t, 5*time.Second, "second link", func() bool { box.mu.Lock(); defer box.mu.Unlock(); return len(box.links["c@example.com"]) == 2 })
	expired := box.tokenFor(t, "c@example.com")
	if _, err := e.db.Pool().Exec(context.Background(), `UPDATE magic_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": expired}), 401, bgcheck.CodeInvalidMagicLink)
}

// Of 20 concurrent verifies of one link, exactly one signs in.
func TestMagicLinkWorksOnceUnderConcurrency(t *testing.T) {
	e, box := newPortalEnv(t)
	e.user("", "c@example.com", bgcheck.RoleConsumer, "correct horse battery")
	e.do("POST", "/api/v1/auth/magic-link/request", "", map[string]any{"email": "c@example.com"})
	token := box.tokenFor(t, "c@example.com")
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			switch e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": token}).Status {
			case 200:
				ok.Add(1)
			case 401:
				refused.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || refused.Load() != 19 {
		t.Fatalf("%d verifies succeeded and %d were refused; want 1 and 19", ok.Load(), refused.Load())
	}
}

// A token proves only that we signed it once: the session it names must be its subject's, and
// the account and role come from the database, not from the token's claims.
func TestBearerIsBoundToTheSessionsUserAndCurrentRole(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	admin := e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")
	e.user("", "jane@example.com", bgcheck.RoleConsumer, "a long password")
	consumer := e.login("jane@example.com", "a long password")
	var consumerClaims auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(consumer.AccessToken, &consumerClaims); err != nil {
		t.Fatal(err)
	}
	forge := func(sub, acct, role string) string {
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "bgcheck", "aud": []string{"bgcheck-portal"},
			"sub": sub, "acct": acct, "role": role, "typ": "access", "sid": consumerClaims.Session, "jti": "forged",
			"iat": now.Unix(), "exp": now.Add(time.Minute).Unix()})
		tok.Header["kid"] = auth.KeyID(signingKey)
		s, err := tok.SignedString(signingKey)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The consumer's live session under the admin's name: refused.
	wantProblem(t, e.bearer("GET", "/api/v1/admin/overview", forge(admin.ID, a.ID, "admin"), nil), 401, bgcheck.CodeInvalidToken)
	// The consumer's own name with an admin role and account claimed: the database says consumer.
	wantProblem(t, e.bearer("GET", "/api/v1/admin/overview", forge(consumerClaims.Subject, a.ID, "admin"), nil), 403, bgcheck.CodeForbidden)

	// A role taken away in the database stops working within a second, without a new token.
	pair := e.login("admin@acme.test", "correct horse battery")
	if r := e.bearer("GET", "/api/v1/admin/overview", pair.AccessToken, nil); r.Status != 200 {
		t.Fatalf("admin overview: %d %s", r.Status, r.Body)
	}
	if _, err := e.db.Pool().Exec(context.Background(), `UPDATE users SET role = 'consumer', account_id = NULL WHERE id = $1`, admin.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Second, "demotion takes effect", func() bool {
		return e.bearer("GET", "/api/v1/admin/overview", pair.AccessToken, nil).Status == 403
	})
	// A refresh issues tokens with the role the user has now.
	fresh := decode[pairJSON](t, e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 200)
	var freshClaims auth.Claims
	if _, _, err := jwt.NewParser().ParseUnverified(fresh.AccessToken, &freshClaims); err != nil {
		t.Fatal(err)
	}
	if freshClaims.Role != bgcheck.RoleConsumer || freshClaims.Account != "" {
		t.Fatalf("refreshed claims role %q account %q", freshClaims.Role, freshClaims.Account)
	}
}

// Every 401 names the scheme to authenticate with, sign-in failures included.
func TestEvery401CarriesWWWAuthenticate(t *testing.T) {
	e, _ := newPortalEnv(t)
	for _, r := range []*response{
		e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "nobody@acme.test", "password": "wrong password"}),
		e.do("POST", "/api/v1/auth/magic-link/verify", "", map[string]any{"token": "no-such-link-token-0123456789"}),
		e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": "not.a.jwt"}),
		e.do("GET", "/api/v1/webhooks/endpoints", "", nil),
		e.do("GET", "/api/v1/me", "", nil),
	} {
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate: %s", r.Body)
		}
	}
}
