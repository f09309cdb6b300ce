package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
)

func TestAPIKeyFailuresGetTheCodesOfSection1(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	past := time.Now().Add(-time.Hour)
	future := time.Now().Add(time.Hour)
	expired, _ := e.newKey(a.ID, keyOpts{expiresAt: &past})
	notYetExpired, _ := e.newKey(a.ID, keyOpts{expiresAt: &future})
	fenced, _ := e.newKey(a.ID, keyOpts{allowed: []string{"203.0.113.0/24"}})
	loopbackOnly, _ := e.newKey(a.ID, keyOpts{allowed: []string{"127.0.0.1/32", "::1/128"}})
	revoked, revokedID := e.newKey(a.ID, keyOpts{})
	if err := e.db.RevokeAPIKey(context.Background(), a.ID, revokedID); err != nil {
		t.Fatal(err)
	}
	readOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksRead}})
	writeOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksWrite}})
	candidatesOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeCandidatesRead, bgcheck.ScopeCandidatesWrite}})

	const list = "/api/v1/webhooks/endpoints"
	body := map[string]any{"url": "https://example.com/hook"}
	cases := []struct {
		name   string
		method string
		key    string
		body   any
		status int
		code   bgcheck.Code
	}{
		{"no key", "GET", "", nil, 401, bgcheck.CodeMissingAPIKey},
		{"unknown key", "GET", auth.NewAPIKey(bgcheck.ModeTest).Raw, nil, 401, bgcheck.CodeInvalidAPIKey},
		{"malformed key", "GET", "svc_test_nope", nil, 401, bgcheck.CodeInvalidAPIKey},
		{"wrong prefix", "GET", "sk_test_" + strings.Repeat("a", 43), nil, 401, bgcheck.CodeInvalidAPIKey},
		{"revoked key", "GET", revoked, nil, 401, bgcheck.CodeInvalidAPIKey},
		{"expired key", "GET", expired, nil, 401, bgcheck.CodeAPIKeyExpired},
		{"address outside allowlist", "GET", fenced, nil, 403, bgcheck.CodeIPNotAllowed},
		{"read scope cannot write", "POST", readOnly, body, 403, bgcheck.CodeInsufficientScope},
		{"write scope does not imply read", "GET", writeOnly, nil, 403, bgcheck.CodeInsufficientScope},
		{"other family's scopes", "GET", candidatesOnly, nil, 403, bgcheck.CodeInsufficientScope},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, list, c.key, c.body)
			p := wantProblem(t, r, c.status, c.code)
			if c.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if c.code == bgcheck.CodeInsufficientScope && !strings.Contains(p.Detail, "webhooks:") {
				t.Errorf("detail %q does not name the missing scope", p.Detail)
			}
		})
	}

	for name, key := range map[string]string{"allowlisted address": loopbackOnly, "expiry in the future": notYetExpired,
		"read scope reads": readOnly, "full access": a.TestKey} {
		if r := e.do("GET", list, key, nil); r.Status != http.StatusOK {
			t.Errorf("%s: status %d, body %s", name, r.Status, r.Body)
		}
	}
	if r := e.do("POST", list, writeOnly, body); r.Status != http.StatusCreated {
		t.Errorf("write scope cannot create: %d %s", r.Status, r.Body)
	}
	// Nothing the failures sent was created.
	page := decode[pageJSON[endpointJSON]](t, e.do("GET", list, a.TestKey, nil), 200)
	if len(page.Data) != 1 {
		t.Fatalf("%d endpoints after one successful create", len(page.Data))
	}
}

// The raw key must never reach the database or the logs; only its hash and its last four
// characters are kept.
func TestRawKeysAreNeverStoredOrLogged(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	extra, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksRead}})
	for _, k := range []string{a.TestKey, a.LiveKey, extra} {
		e.do("GET", "/api/v1/webhooks/endpoints", k, nil)
	}
	e.do("GET", "/api/v1/webhooks/endpoints", a.TestKey[:len(a.TestKey)-1]+"x", nil) // a failed attempt
	if err := e.keys.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var dump string
	if err := e.db.Pool().QueryRow(context.Background(),
		`SELECT string_agg(k::text || encode(key_hash, 'escape'), E'\n') FROM api_keys k`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a.TestKey, a.LiveKey, extra} {
		secret := k[len("svc_test_"):]
		if strings.Contains(dump, secret[:20]) {
			t.Fatalf("the api_keys table holds a raw key")
		}
		if strings.Contains(e.logs.String(), secret[:20]) {
			t.Fatalf("the logs hold a raw key")
		}
		if !strings.Contains(dump, k[len(k)-4:]) {
			t.Fatalf("last4 of a key is not stored")
		}
	}
}

// Two API instances share one database; a key revoked through one stops working on the other
// within a second.
func TestRevokedKeyRefusedByAnotherInstanceWithinOneSecond(t *testing.T) {
	first := newEnv(t, api.Options{})
	second := newEnvOn(t, first.db, api.Options{})
	a := first.newAccount()
	key, id := first.newKey(a.ID, keyOpts{})
	for _, e := range []*env{first, second} {
		if r := e.do("GET", "/api/v1/webhooks/endpoints", key, nil); r.Status != 200 {
			t.Fatalf("before revocation: %d", r.Status)
		}
	}
	if err := first.db.RevokeAPIKey(context.Background(), a.ID, id); err != nil {
		t.Fatal(err)
	}
	revokedAt := time.Now()
	for second.do("GET", "/api/v1/webhooks/endpoints", key, nil).Status != http.StatusUnauthorized {
		if time.Since(revokedAt) > time.Second {
			t.Fatal("revoked key still accepted by another instance after 1 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
