package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/secretbox"
)

func ctl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out)
	return out.String(), err
}

func TestOperatorCommands(t *testing.T) {
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	loopback := netip.MustParseAddr("127.0.0.1")
	verify := func(raw string) error {
		_, err := auth.NewVerifier(db, 0, nil).Verify(ctx, raw, loopback)
		return err
	}

	if out, err := ctl(t, "", "migrate"); err != nil || !strings.Contains(out, `"applied": []`) {
		t.Fatalf("migrate on a migrated database: %q %v", out, err)
	}

	out, err := ctl(t, "", "bootstrap", "--account", "Acme", "--admin-email", "admin@acme.test", "--admin-password", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("bootstrap output %q: %v", out, err)
	}
	if !strings.HasPrefix(raw["test_key"], "svc_test_") || !strings.HasPrefix(raw["live_key"], "svc_live_") ||
		!bgcheck.ValidID("acct", raw["account_id"]) || !bgcheck.ValidID("usr", raw["admin_user_id"]) {
		t.Fatalf("bootstrap printed %v", raw)
	}
	for _, k := range []string{raw["test_key"], raw["live_key"]} {
		if err := verify(k); err != nil {
			t.Fatalf("bootstrapped key refused: %v", err)
		}
	}
	var hash string
	if err := db.Pool().QueryRow(ctx, `SELECT password_hash FROM users WHERE id = $1`, raw["admin_user_id"]).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if err := auth.CheckPassword(hash, "correct horse battery"); err != nil {
		t.Fatalf("admin password hash: %v", err)
	}

	out, err = ctl(t, "", "keys", "create", "--account", raw["account_id"], "--mode", "live", "--name", "ci",
		"--scopes", "webhooks:read,candidates:read", "--expires-at", "2099-01-01T00:00:00Z", "--allow-ip", "127.0.0.1", "--allow-ip", "2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID         string   `json:"id"`
		Key        string   `json:"key"`
		Mode       string   `json:"mode"`
		Scopes     []string `json:"scopes"`
		AllowedIPs []string `json:"allowed_ips"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	if created.Mode != "live" || len(created.Scopes) != 2 || strings.Join(created.AllowedIPs, " ") != "127.0.0.1/32 2001:db8::/32" {
		t.Fatalf("keys create printed %s", out)
	}
	if err := verify(created.Key); err != nil {
		t.Fatalf("created key refused: %v", err)
	}
	if _, err := ctl(t, "", "keys", "revoke", created.ID); err != nil {
		t.Fatal(err)
	}
	if err := verify(created.Key); bgcheck.ErrorCode(err) != bgcheck.CodeInvalidAPIKey {
		t.Fatalf("revoked key: %v", err)
	}

	out, err = ctl(t, "a long enough password\n", "users", "create", "--account", raw["account_id"], "--email", "c@acme.test", "--role", "consumer")
	if err != nil || !strings.Contains(out, `"role": "consumer"`) {
		t.Fatalf("users create: %q %v", out, err)
	}
	if _, err := ctl(t, "another password!\n", "users", "create", "--account", raw["account_id"], "--email", "C@acme.test", "--role", "admin"); bgcheck.ErrorCode(err) != bgcheck.CodeEmailTaken {
		t.Fatalf("duplicate e-mail (case-insensitive): %v", err)
	}

	// Mistakes are usage errors or clear failures, and change nothing.
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"keys", "create", "--account", raw["account_id"], "--mode", "prod"},
		{"keys", "create", "--account", raw["account_id"], "--mode", "test", "--scopes", "admin:all"},
		{"keys", "create", "--account", raw["account_id"], "--mode", "test", "--allow-ip", "not-an-ip"},
		{"keys", "create", "--account", raw["account_id"], "--mode", "test", "--expires-at", "tomorrow"},
		{"keys", "revoke"},
		{"bootstrap", "--account", "X", "--admin-email", "x@x.test", "--admin-password", "short"},
	} {
		var ue usageError
		if _, err := ctl(t, "", args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := ctl(t, "", "keys", "create", "--account", "acct_missing", "--mode", "test"); err == nil || !strings.Contains(err.Error(), "no account") {
		t.Errorf("key for a missing account: %v", err)
	}
	if _, err := ctl(t, "", "keys", "revoke", "key_missing"); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("revoking a missing key: %v", err)
	}
	var keys int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM api_keys`).Scan(&keys); err != nil || keys != 3 {
		t.Fatalf("%d keys stored, want 3", keys)
	}
}

// secrets rotate-key re-encrypts every endpoint secret under BGCHECK_SECRETS_KEY, opening them
// with the previous key; afterwards the new key alone reads them.
func TestSecretsRotateKey(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	oldKey, newKey := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	openWith := func(current string, previous ...string) *postgres.DB {
		box, err := secretbox.Parse(current, previous)
		if err != nil {
			t.Fatal(err)
		}
		db, err := postgres.Open(ctx, url, postgres.WithSecrets(box))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return db
	}
	db := openWith(oldKey)
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "a@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}
	if _, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{URL: "https://example.com/h", Events: []string{"*"}, Enabled: true, Secret: "whsec_x"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", url)
	t.Setenv("BGCHECK_SECRETS_KEY", newKey)
	t.Setenv("BGCHECK_SECRETS_PREVIOUS_KEYS", "")
	if _, err := ctl(t, "", "secrets", "rotate-key"); err == nil || !strings.Contains(err.Error(), "previous keys") {
		t.Fatalf("rotate without the old key: %v", err)
	}
	t.Setenv("BGCHECK_SECRETS_PREVIOUS_KEYS", oldKey)
	out, err := ctl(t, "", "secrets", "rotate-key")
	if err != nil || !strings.Contains(out, `"reencrypted": 1`) {
		t.Fatalf("rotate-key: %q %v", out, err)
	}
	var keyID string
	if err := openWith(newKey).Pool().QueryRow(ctx, `SELECT secret_key_id FROM webhook_endpoints`).Scan(&keyID); err != nil || keyID != secretbox.KeyID(mustParseKey(t, newKey)) {
		t.Fatalf("key id %q, %v", keyID, err)
	}
}

func mustParseKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := secretbox.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
