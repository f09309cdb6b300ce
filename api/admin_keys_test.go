package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
)

type apiKeyJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Mode       string     `json:"mode"`
	Prefix     string     `json:"prefix"`
	Last4      string     `json:"last4"`
	Scopes     []string   `json:"scopes"`
	AllowedIPs []string   `json:"allowed_ips"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	CreatedAt  time.Time  `json:"created_at"`
	Key        string     `json:"key"`
}

func TestAdminAPIKeys(t *testing.T) {
	s := newAdminScene(t)
	keys := adminPath + "/api-keys"
	before := time.Now().Add(-time.Second)
	r := s.bearer("POST", keys, s.adminA, map[string]any{"name": "CI", "mode": "live"})
	created := decode[apiKeyJSON](t, r, http.StatusCreated)
	if !bgcheck.ValidID(bgcheck.PrefixAPIKey, created.ID) || created.Name != "CI" || created.Mode != "live" ||
		created.Prefix != "svc_live_" || !strings.HasPrefix(created.Key, "svc_live_") || len(created.Key) != 52 ||
		created.Last4 != created.Key[len(created.Key)-4:] || created.Scopes == nil || len(created.Scopes) != 0 ||
		created.AllowedIPs == nil || len(created.AllowedIPs) != 0 || created.ExpiresAt != nil || created.LastUsedAt != nil ||
		created.CreatedAt.Before(before) {
		t.Fatalf("created %s", r.Body)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the answer with the raw key may be cached: Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	var hashed, raw int // the key is stored as its SHA-256 only
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE key_hash = sha256($1::bytea)),
		count(*) FILTER (WHERE key_hash = $1::bytea) FROM api_keys WHERE id = $2`, []byte(created.Key), created.ID).Scan(&hashed, &raw); err != nil || hashed != 1 || raw != 0 {
		t.Fatalf("stored as its hash: %d, as itself: %d (%v)", hashed, raw, err)
	}

	// The list: newest first, never a raw key, revoked keys left out.
	r = s.bearer("GET", keys, s.adminA, nil)
	page := decode[pageJSON[apiKeyJSON]](t, r, 200)
	if len(page.Data) != 3 || page.Data[0].ID != created.ID || page.Data[0].Last4 != created.Last4 || page.Data[0].Prefix != "svc_live_" ||
		strings.Contains(string(r.Body), `"key"`) || strings.Contains(string(r.Body), created.Key) || strings.Contains(string(r.Body), "hash") {
		t.Fatalf("list %s", r.Body)
	}
	for _, k := range page.Data {
		if k.Scopes == nil || k.AllowedIPs == nil {
			t.Fatalf("key %+v: scopes and allowed_ips must be lists", k)
		}
	}
	first := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", keys+"?limit=2", s.adminA, nil), 200)
	rest := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", keys+"?limit=2&cursor="+*first.NextCursor, s.adminA, nil), 200)
	if len(first.Data) != 2 || !first.HasMore || len(rest.Data) != 1 || rest.HasMore || rest.Data[0].ID != page.Data[2].ID {
		t.Fatalf("pages %+v then %+v", first, rest)
	}
	wantFieldError(t, s.bearer("GET", keys+"?limit=0", s.adminA, nil), "limit")
	wantFieldError(t, s.bearer("GET", keys+"?cursor=dlv_1", s.adminA, nil), "cursor")

	// B sees none of A's keys and cannot revoke them.
	bPage := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", keys, s.adminB, nil), 200)
	if slices.Contains(ids(bPage.Data, func(k apiKeyJSON) string { return k.ID }), created.ID) || len(bPage.Data) != 2 {
		t.Fatalf("B lists %+v", bPage.Data)
	}
	wantProblem(t, s.bearer("DELETE", keys+"/"+created.ID, s.adminB, nil), 404, bgcheck.CodeNotFound)
	decode[map[string]any](t, s.do("GET", endpoints, created.Key, nil), 200)

	if r := s.bearer("DELETE", keys+"/"+created.ID, s.adminA, nil); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if p := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", keys, s.adminA, nil), 200); len(p.Data) != 2 || p.Data[0].ID == created.ID {
		t.Fatalf("after revoking, the list is %+v", p.Data)
	}
	if r := s.bearer("DELETE", keys+"/"+created.ID, s.adminA, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoking again: %d %s", r.Status, r.Body)
	}
	wantProblem(t, s.bearer("DELETE", keys+"/"+bgcheck.NewID(bgcheck.PrefixAPIKey), s.adminA, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("DELETE", keys+"/key_malformed", s.adminA, nil), 404, bgcheck.CodeNotFound)

	// Bad requests.
	for name, c := range map[string]struct {
		body  any
		field string
	}{
		"no mode":        {map[string]any{"name": "x"}, "mode"},
		"null mode":      {map[string]any{"mode": nil}, "mode"},
		"unknown mode":   {map[string]any{"mode": "prod"}, "mode"},
		"mode not text":  {map[string]any{"mode": 1}, "mode"},
		"unknown scope":  {map[string]any{"mode": "test", "scopes": []string{"webhooks:read", "admin:all"}}, "scopes"},
		"scopes as text": {map[string]any{"mode": "test", "scopes": "webhooks:read"}, "scopes"},
		"past expiry":    {map[string]any{"mode": "test", "expires_at": time.Now().Add(-time.Minute).Format(time.RFC3339)}, "expires_at"},
		"not a time":     {map[string]any{"mode": "test", "expires_at": "next week"}, "expires_at"},
		"empty time":     {map[string]any{"mode": "test", "expires_at": ""}, "expires_at"},
		"bad address":    {map[string]any{"mode": "test", "allowed_ips": []string{"10.0.0.0/33"}}, "allowed_ips"},
		"long name":      {map[string]any{"mode": "test", "name": strings.Repeat("k", 101)}, "name"},
	} {
		t.Run(name, func(t *testing.T) {
			wantFieldError(t, s.bearer("POST", keys, s.adminA, c.body), c.field)
		})
	}
	wantProblem(t, s.bearer("POST", keys, s.adminA, `{"mode":"test","account_id":"`+s.b.ID+`"}`), 400, bgcheck.CodeMalformedJSON)
	wantProblem(t, s.bearer("POST", keys, s.adminA, `{"mode":`), 400, bgcheck.CodeMalformedJSON)
	wantProblem(t, s.bearer("POST", keys, s.adminA, nil), 400, bgcheck.CodeMalformedJSON)
	p := wantProblem(t, s.bearer("POST", keys, s.adminA, map[string]any{"mode": "x", "scopes": []string{"x"}, "allowed_ips": []string{"x"}}), 422, bgcheck.CodeValidationFailed)
	if len(p.Errors) != 3 {
		t.Fatalf("errors %+v, want mode, scopes and allowed_ips at once", p.Errors)
	}
	if n := len(decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", keys, s.adminA, nil), 200).Data); n != 2 {
		t.Fatalf("%d keys after refused creates, want 2", n)
	}
}

// A key an admin issues works at once, and a revoked one is refused at once on the instance that
// revoked it (which had it cached) and within a second on another.
func TestAdminIssuedKeyWorksUntilRevoked(t *testing.T) {
	s := newAdminScene(t)
	other := newEnvOn(t, s.db, api.Options{}) // another API instance on the same database
	k := decode[apiKeyJSON](t, s.bearer("POST", adminPath+"/api-keys", s.adminA, map[string]any{"mode": "test"}), http.StatusCreated)
	ep := decode[endpointJSON](t, s.do("POST", endpoints, k.Key, map[string]any{"url": "https://example.com/hook"}), http.StatusCreated)
	decode[endpointJSON](t, s.do("GET", endpoints+"/"+ep.ID, s.a.TestKey, nil), 200) // the account's test data
	decode[map[string]any](t, other.do("GET", endpoints, k.Key, nil), 200)           // cached on the other instance too

	if r := s.bearer("DELETE", adminPath+"/api-keys/"+k.ID, s.adminA, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	wantProblem(t, s.do("GET", endpoints, k.Key, nil), 401, bgcheck.CodeInvalidAPIKey)
	start := time.Now()
	waitUntil(t, 2*time.Second, "the other instance refuses the revoked key", func() bool {
		return other.do("GET", endpoints, k.Key, nil).Status == 401
	})
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the other instance took %s", d)
	}
	wantProblem(t, other.do("GET", endpoints, k.Key, nil), 401, bgcheck.CodeInvalidAPIKey)
}

// A key's scopes, allowlist, expiry and mode, as given to the admin API, hold when it is used.
func TestAdminIssuedKeyRestrictions(t *testing.T) {
	s := newAdminScene(t)
	issue := func(body map[string]any) apiKeyJSON {
		t.Helper()
		return decode[apiKeyJSON](t, s.bearer("POST", adminPath+"/api-keys", s.adminA, body), http.StatusCreated)
	}
	liveEP := s.createEndpoint(s.a.LiveKey, "https://example.com/live")

	readOnly := issue(map[string]any{"mode": "live", "scopes": []string{"webhooks:read", "webhooks:read"}})
	if !slices.Equal(readOnly.Scopes, []string{"webhooks:read"}) {
		t.Fatalf("scopes %v", readOnly.Scopes)
	}
	if p := decode[pageJSON[endpointJSON]](t, s.do("GET", endpoints, readOnly.Key, nil), 200); len(p.Data) != 1 || p.Data[0].ID != liveEP.ID {
		t.Fatalf("a live key sees %+v, want the live endpoint", p.Data)
	}
	wantProblem(t, s.do("POST", endpoints, readOnly.Key, map[string]any{"url": "https://example.com/x"}), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, s.do("GET", candidates, readOnly.Key, nil), 403, bgcheck.CodeInsufficientScope)

	// The test server's clients come from 127.0.0.1.
	elsewhere := issue(map[string]any{"mode": "test", "allowed_ips": []string{"10.0.0.0/8", "2001:db8::/32"}})
	if !slices.Equal(elsewhere.AllowedIPs, []string{"10.0.0.0/8", "2001:db8::/32"}) {
		t.Fatalf("allowed_ips %v", elsewhere.AllowedIPs)
	}
	wantProblem(t, s.do("GET", endpoints, elsewhere.Key, nil), 403, bgcheck.CodeIPNotAllowed)
	here := issue(map[string]any{"mode": "test", "allowed_ips": []string{"::1", "127.0.0.1"}})
	if !slices.Equal(here.AllowedIPs, []string{"::1/128", "127.0.0.1/32"}) {
		t.Fatalf("allowed_ips %v", here.AllowedIPs)
	}
	decode[pageJSON[endpointJSON]](t, s.do("GET", endpoints, here.Key, nil), 200)

	expiry := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	expiring := issue(map[string]any{"mode": "test", "expires_at": expiry.Format(time.RFC3339)})
	if expiring.ExpiresAt == nil || !expiring.ExpiresAt.Equal(expiry) {
		t.Fatalf("expires_at %v, want %v", expiring.ExpiresAt, expiry)
	}
	decode[pageJSON[endpointJSON]](t, s.do("GET", endpoints, expiring.Key, nil), 200)
	if _, err := s.db.Pool().Exec(context.Background(), `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expiring.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 2*time.Second, "the key is refused once past its expiry", func() bool {
		return s.do("GET", endpoints, expiring.Key, nil).Status == 401
	})
	wantProblem(t, s.do("GET", endpoints, expiring.Key, nil), 401, bgcheck.CodeAPIKeyExpired)

	// The list shows what each key carries.
	page := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", adminPath+"/api-keys", s.adminA, nil), 200)
	if len(page.Data) != 6 || page.Data[0].ID != expiring.ID || page.Data[0].ExpiresAt == nil || page.Data[2].ID != elsewhere.ID ||
		len(page.Data[2].AllowedIPs) != 2 || page.Data[3].ID != readOnly.ID || page.Data[3].Mode != "live" {
		t.Fatalf("list %+v", page.Data)
	}
}
