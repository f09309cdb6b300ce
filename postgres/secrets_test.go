package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/secretbox"
	"github.com/bgcheck/bgcheck/webhook"
)

// secretOf is what a delivery attempt would sign with: the endpoint's secret, read through db.
func secretOf(t *testing.T, db *postgres.DB, deliveryID string) string {
	t.Helper()
	target, err := db.FindAttemptTarget(context.Background(), deliveryID)
	if err != nil {
		t.Fatal(err)
	}
	return target.Secret
}

// Endpoint secrets never reach the database in plaintext (nor any backup of it); rows written
// before sealing are sealed at the API's start, and rotate-key re-encrypts under a new key while
// the old one still opens what it sealed.
func TestEndpointSecretsAreSealedAtRestAndRotate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	oldKey, newKey := strings.Repeat("0f", 32), strings.Repeat("e1", 32)
	open := func(current string, previous ...string) *postgres.DB {
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
	db := open(oldKey)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tn, eps := tenantWithEndpoints(t, db, bgcheck.ModeTest, []string{"*"}, []string{"*"})
	sso := ssoAccount(t, db, "acme.test") // an OIDC client secret, sealed the same way
	secret := webhook.NewSecret()
	// With an overlap, so the rotated-out secret is sealed under the old key too.
	if _, err := db.RotateEndpointSecret(ctx, tn, eps[0], secret, time.Hour); err != nil {
		t.Fatal(err)
	}
	ev, err := db.CreateEvent(ctx, tn, "report.ready", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	deliveryTo := map[string]string{}
	rows, _ := db.Pool().Query(ctx, `SELECT endpoint_id, id FROM deliveries WHERE event_id = $1`, ev.ID)
	for rows.Next() {
		var ep, d string
		_ = rows.Scan(&ep, &d)
		deliveryTo[ep] = d
	}
	if got := secretOf(t, db, deliveryTo[eps[0]]); got != secret {
		t.Fatalf("secret read back %q, want %q", got, secret)
	}

	stored := func(id string) (plain *string, keyID *string, sealed []byte) {
		t.Helper()
		if err := db.Pool().QueryRow(ctx, `SELECT secret, secret_key_id, secret_sealed FROM webhook_endpoints WHERE id = $1`, id).
			Scan(&plain, &keyID, &sealed); err != nil {
			t.Fatal(err)
		}
		return
	}
	plain, keyID, sealed := stored(eps[0])
	if plain != nil || keyID == nil || *keyID != secretbox.KeyID(mustKey(t, oldKey)) || bytes.Contains(sealed, []byte(secret)) {
		t.Fatalf("stored plaintext %v key %v sealed %x", plain, keyID, sealed)
	}

	// A row from before sealing: plaintext, no key. The API's start seals it.
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_endpoints SET secret = 'whsec_legacy', secret_sealed = NULL, secret_key_id = NULL WHERE id = $1`, eps[1]); err != nil {
		t.Fatal(err)
	}
	if got := secretOf(t, db, deliveryTo[eps[1]]); got != "whsec_legacy" {
		t.Fatalf("legacy secret read %q", got)
	}
	if n, err := db.ResealSecrets(ctx, true); err != nil || n != 1 {
		t.Fatalf("sealed %d plaintext secrets, %v", n, err)
	}
	if plain, _, _ := stored(eps[1]); plain != nil {
		t.Fatalf("legacy secret still in plaintext: %q", *plain)
	}

	// Rotation: the new key seals, the old one still opens until rotate-key has run.
	rotated := open(newKey, oldKey)
	if got := secretOf(t, rotated, deliveryTo[eps[0]]); got != secret {
		t.Fatalf("after adding the new key, secret %q", got)
	}
	if n, err := rotated.ResealSecrets(ctx, false); err != nil || n != 2 {
		t.Fatalf("re-encrypted %d, %v", n, err)
	}
	if n, err := rotated.ResealSSOSecrets(ctx); err != nil || n != 1 {
		t.Fatalf("re-encrypted %d SSO client secrets, %v", n, err)
	}
	onlyNew := open(newKey)
	if got, err := onlyNew.OpenOIDCClientSecret(ctx, sso.ID); err != nil || got != "secret" {
		t.Fatalf("with only the new key, the client secret reads %q, %v", got, err)
	}
	for ep, want := range map[string]string{eps[0]: secret, eps[1]: "whsec_legacy"} {
		if got := secretOf(t, onlyNew, deliveryTo[ep]); got != want {
			t.Fatalf("with only the new key, %s reads %q, want %q", ep, got, want)
		}
	}
	if _, err := open(oldKey).FindAttemptTarget(ctx, deliveryTo[eps[0]]); err == nil {
		t.Fatal("the retired key still opens a secret")
	}
	// A sealed secret copied to another endpoint's row does not open there.
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_endpoints SET secret_sealed = (SELECT secret_sealed FROM webhook_endpoints WHERE id = $1) WHERE id = $2`, eps[0], eps[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := onlyNew.FindAttemptTarget(ctx, deliveryTo[eps[1]]); err == nil {
		t.Fatal("a secret moved to another row opened")
	}
}

func mustKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := secretbox.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
