package idptest

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
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
}

// TamperIDTokens makes the token endpoint answer with ID tokens whose claims were changed
// after signing (the audience becomes another client's), as a forger would.
func (p *OIDCProvider) TamperIDTokens(on bool) { p.tamper.Store(on) }

// tamperer rewrites the ID token of token responses while p.tamper is on.
func (p *OIDCProvider) tamperer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.tamper.Load() || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err == nil {
			if tok, ok := body["id_token"].(string); ok {
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
	st := storage.NewStorageWithClients(p.users, p.clients)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: p.tamperer(exampleop.SetupServer(p.Issuer, st, nil, false))}}
	srv.Start()
	t.Cleanup(srv.Close)
	return p
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
