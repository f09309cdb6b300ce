package idptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// OIDCProvider is zitadel/oidc's example OpenID Provider on a local port: discovery, a login
// form at /login/username, authorization code with PKCE, signed ID tokens and userinfo. Like
// many real providers it leaves the e-mail out of the ID token and serves it from userinfo.
type OIDCProvider struct {
	// Issuer is the provider's URL, its discovery document's issuer.
	Issuer  string
	users   *users
	clients map[string]*storage.Client
	mu      sync.Mutex
	tamper  atomic.Bool
	expire  atomic.Bool
	swap    atomic.Pointer[string]
}

// ExpireIDTokens makes the provider issue ID tokens that expired an hour before they were
// issued (signed as usual), as a provider whose clock is far behind would.
func (p *OIDCProvider) ExpireIDTokens(on bool) { p.expire.Store(on) }

// SwapIDTokens makes the token endpoint answer with idToken, a token the provider really
// issued (for another client, or for another sign-in), instead of the one it just made; ""
// stops it.
func (p *OIDCProvider) SwapIDTokens(idToken string) {
	if idToken == "" {
		p.swap.Store(nil)
		return
	}
	p.swap.Store(&idToken)
}

// TamperIDTokens makes the token endpoint answer with ID tokens whose claims were changed
// after signing (the audience becomes another client's), as a forger would.
func (p *OIDCProvider) TamperIDTokens(on bool) { p.tamper.Store(on) }

// tamperer rewrites the token endpoint's answers while p.tamper, p.swap or p.expire is on.
func (p *OIDCProvider) tamperer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		swap, expire := p.swap.Load(), p.expire.Load()
		if !p.tamper.Load() && swap == nil && !expire || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil {
			if expire {
				// The access token's expiry went back as far, which zitadel writes as an
				// unsigned wrap-around; only the ID token is meant to have expired.
				body["expires_in"] = 300
			} else if _, ok := body["id_token"].(string); ok && swap != nil {
				body["id_token"] = *swap
			} else if tok, ok := body["id_token"].(string); ok {
				parts := strings.Split(tok, ".")
				if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
					var claims map[string]any
					_ = json.Unmarshal(payload, &claims)
					claims["aud"] = []string{"another-client"}
					changed, _ := json.Marshal(claims)
					parts[1] = base64.RawURLEncoding.EncodeToString(changed)
					body["id_token"] = strings.Join(parts, ".")
				}
			}
		}
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// StartOIDC runs a provider until the test ends.
func StartOIDC(t testing.TB) *OIDCProvider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &OIDCProvider{Issuer: "http://" + ln.Addr().String(), users: &users{byID: map[string]*storage.User{}},
		clients: map[string]*storage.Client{}}
	st := clockStorage{Storage: storage.NewStorageWithClients(p.users, p.clients), expire: &p.expire}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: p.tamperer(exampleop.SetupServer(p.Issuer, st, nil, false))}}
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// clockStorage is the example storage, whose clients' clock skew sets back the expiry of the ID
// tokens they get while expire is on.
type clockStorage struct {
	*storage.Storage
	expire *atomic.Bool
}

func (s clockStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || !s.expire.Load() {
		return c, err
	}
	return skewedClient{Client: c}, nil
}

// skewedClient's ID tokens expire two hours early: an hour before they are issued.
type skewedClient struct{ op.Client }

func (skewedClient) ClockSkew() time.Duration { return -2 * time.Hour }

// IDToken signs username in for another client (or another sign-in of ours) through the
// provider's own login form, trades the code at its token endpoint as that client, and returns
// the ID token the provider issued: genuinely signed, with that client's audience and nonce.
func (p *OIDCProvider) IDToken(t testing.TB, clientID, secret, redirectURI, username, password, nonce string) string {
	t.Helper()
	b := NewBrowser(redirectURI)
	authorize := p.Issuer + "/auth?" + url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"scope": {"openid email profile"}, "state": {"state-" + nonce}, "nonce": {nonce}}.Encode()
	back := b.Submit(t, b.Get(t, authorize), map[string]string{"username": username, "password": password}).Location()
	if back == nil || back.Query().Get("code") == "" {
		t.Fatalf("the provider did not send %s back with a code", clientID)
	}
	req, err := http.NewRequest(http.MethodPost, p.Issuer+"/oauth/token", strings.NewReader(url.Values{
		"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "redirect_uri": {redirectURI}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.IDToken == "" {
		t.Fatalf("token endpoint: %d, %v", res.StatusCode, err)
	}
	return tok.IDToken
}

// AddClient registers a confidential web client with one redirect URI. Call it before a
// sign-in uses the client.
func (p *OIDCProvider) AddClient(id, secret, redirectURI string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[id] = storage.WebClient(id, secret, redirectURI)
}

// AddUser adds a person who signs in with username and password.
func (p *OIDCProvider) AddUser(username, password, email string, emailVerified bool) {
	p.users.add(&storage.User{ID: "sub-" + username, Username: username, Password: password,
		FirstName: username, LastName: "Tester", Email: email, EmailVerified: emailVerified})
}

type users struct {
	mu   sync.Mutex
	byID map[string]*storage.User
}

func (u *users) add(user *storage.User) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byID[user.ID] = user
}

func (u *users) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func (u *users) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, user := range u.byID {
		if user.Username == name {
			return user
		}
	}
	return nil
}

func (u *users) ExampleClientID() string { return "service" }
