package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/internal/dev/eventcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// env is one API server on a fresh database, reached over real HTTP.
type env struct {
	t    *testing.T
	db   *postgres.DB
	keys *auth.Verifier
	srv  *httptest.Server
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T, opts api.Options) *env {
	t.Helper()
	db := pgtest.NewDB(t)
	// Every event the test's flows emitted must match its type's schema (GET /event-types).
	t.Cleanup(func() { eventcheck.ValidateStored(t, db.Pool()) })
	return newEnvOn(t, db, opts)
}

// newEnvOn starts another API instance on an existing database.
func newEnvOn(t *testing.T, db *postgres.DB, opts api.Options) *env {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	opts.Logger = log
	keys := auth.NewVerifier(db, 0, log)
	srv := httptest.NewServer(api.New(db, keys, opts).Handler())
	t.Cleanup(srv.Close)
	return &env{t: t, db: db, keys: keys, srv: srv, logs: logs}
}

// account is a bootstrapped account with one full-access key per mode.
type account struct {
	ID      string
	TestKey string
	LiveKey string
}

func (e *env) newAccount() account {
	e.t.Helper()
	test, live := auth.NewAPIKey(bgcheck.ModeTest), auth.NewAPIKey(bgcheck.ModeLive)
	acct, _, err := e.db.Bootstrap(context.Background(), "Acme",
		postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin},
		[]bgcheck.NewAPIKey{keyRecord(test, bgcheck.ModeTest), keyRecord(live, bgcheck.ModeLive)})
	if err != nil {
		e.t.Fatal(err)
	}
	return account{ID: acct.ID, TestKey: test.Raw, LiveKey: live.Raw}
}

func keyRecord(g auth.GeneratedKey, mode bgcheck.Mode) bgcheck.NewAPIKey {
	return bgcheck.NewAPIKey{Mode: mode, Hash: g.Hash, Prefix: g.Prefix, Last4: g.Last4}
}

// keyOpts restricts a key issued by newKey.
type keyOpts struct {
	mode      bgcheck.Mode
	scopes    []string
	allowed   []string
	expiresAt *time.Time
}

// newKey issues another key for the account and returns it raw, with its id.
func (e *env) newKey(accountID string, o keyOpts) (string, string) {
	e.t.Helper()
	if o.mode == "" {
		o.mode = bgcheck.ModeTest
	}
	g := auth.NewAPIKey(o.mode)
	rec := keyRecord(g, o.mode)
	rec.AccountID, rec.Scopes, rec.ExpiresAt = accountID, o.scopes, o.expiresAt
	for _, a := range o.allowed {
		rec.AllowedIPs = append(rec.AllowedIPs, netip.MustParsePrefix(a))
	}
	k, err := e.db.CreateAPIKey(context.Background(), rec)
	if err != nil {
		e.t.Fatal(err)
	}
	return g.Raw, k.ID
}

// response is an answer read in full.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request. body may be nil, a string or []byte (sent as is), or any other value
// (sent as JSON).
func (e *env) do(method, path, key string, body any) *response {
	e.t.Helper()
	var headers map[string]string
	if key != "" {
		headers = map[string]string{"X-API-Key": key}
	}
	return e.doWith(method, path, body, headers)
}

// doWith sends a request with the given headers; body as for do.
func (e *env) doWith(method, path string, body any, headers map[string]string) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return &response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// decode reads a JSON answer into a value of type T, failing the test on a status other than want.
func decode[T any](t *testing.T, r *response, want int) T {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d; body %s", r.Status, want, r.Body)
	}
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.Body, err)
	}
	return v
}

// problem is the problem+json body of API.md §1.
type problem struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Code      string               `json:"code"`
	Detail    string               `json:"detail"`
	RequestID string               `json:"request_id"`
	Errors    []bgcheck.FieldError `json:"errors"`
}

// wantProblem asserts r is a problem+json answer with the given status and code, whose request
// id matches the X-Request-Id header, and returns it.
func wantProblem(t *testing.T, r *response, status int, code bgcheck.Code) problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json; status %d body %s", ct, r.Status, r.Body)
	}
	p := decode[problem](t, r, status)
	if p.Code != string(code) || p.Status != status || p.Type != "about:blank" || p.Title == "" {
		t.Fatalf("problem %+v, want status %d code %s", p, status, code)
	}
	if !strings.HasPrefix(p.RequestID, "req_") || p.RequestID != r.Header.Get("X-Request-Id") {
		t.Fatalf("request_id %q does not match X-Request-Id %q", p.RequestID, r.Header.Get("X-Request-Id"))
	}
	if (code == bgcheck.CodeValidationFailed) != (len(p.Errors) > 0) {
		t.Fatalf("errors %v on a %s problem", p.Errors, code)
	}
	return p
}

// wantFieldError asserts a 422 names field.
func wantFieldError(t *testing.T, r *response, field string) {
	t.Helper()
	p := wantProblem(t, r, http.StatusUnprocessableEntity, bgcheck.CodeValidationFailed)
	for _, f := range p.Errors {
		if f.Field == field && f.Message != "" {
			return
		}
	}
	t.Fatalf("422 does not name field %q: %+v", field, p.Errors)
}

type endpointJSON struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Enabled     bool      `json:"enabled"`
	Mode        string    `json:"mode"`
	Secret      string    `json:"secret"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type pageJSON[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func (e *env) createEndpoint(key, url string) endpointJSON {
	e.t.Helper()
	return decode[endpointJSON](e.t, e.do("POST", "/api/v1/webhooks/endpoints", key, map[string]any{"url": url}), http.StatusCreated)
}
