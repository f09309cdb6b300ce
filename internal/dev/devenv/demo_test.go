package devenv

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

func TestEnsureDemo(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	path := filepath.Join(t.TempDir(), "data", "demo.json")

	first, created, err := EnsureDemo(ctx, db, path)
	if err != nil || !created {
		t.Fatalf("first run: created %v, err %v", created, err)
	}
	verifier := auth.NewVerifier(db, time.Minute, testLogger(t))
	for raw, mode := range map[string]bgcheck.Mode{first.TestKey: bgcheck.ModeTest, first.LiveKey: bgcheck.ModeLive} {
		key, err := verifier.Verify(ctx, raw, netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			t.Fatalf("demo %s key does not verify: %v", mode, err)
		}
		if key.AccountID != first.AccountID || key.Mode != mode {
			t.Fatalf("demo %s key is of account %s mode %s, want %s", mode, key.AccountID, key.Mode, first.AccountID)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("demo file: %v, %v; want mode 0600", st, err)
	}

	second, created, err := EnsureDemo(ctx, db, path)
	if err != nil || created || second != first {
		t.Fatalf("second run: created %v, err %v, same %v; want the recorded account reused", created, err, second == first)
	}

	// The database lost the keys (wiped, or another DATABASE_URL): a new account, recorded.
	if err := db.RevokeAPIKey(ctx, "", mustKeyID(t, db, first.TestKey)); err != nil {
		t.Fatal(err)
	}
	third, created, err := EnsureDemo(ctx, db, path)
	if err != nil || !created || third.AccountID == first.AccountID {
		t.Fatalf("after revocation: created %v, err %v, account %s (first %s); want a new account", created, err, third.AccountID, first.AccountID)
	}
	fourth, created, err := EnsureDemo(ctx, db, path)
	if err != nil || created || fourth != third {
		t.Fatalf("the new account was not recorded: created %v, err %v", created, err)
	}
}

func mustKeyID(t *testing.T, db interface {
	FindAPIKeyByHash(context.Context, []byte) (*bgcheck.APIKey, error)
}, raw string) string {
	t.Helper()
	h := auth.HashAPIKey(raw)
	k, err := db.FindAPIKeyByHash(context.Background(), h[:])
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

// The local receiver's endpoint is registered once, reused on the next run, and registered again
// when it has been deleted or the receiver moved.
func TestEnsureReceiverEndpoint(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	path := filepath.Join(t.TempDir(), "demo.json")
	demo, _, err := EnsureDemo(ctx, db, path)
	if err != nil {
		t.Fatal(err)
	}
	const url = "http://127.0.0.1:9000/webhooks"
	if err := EnsureReceiverEndpoint(ctx, db, path, &demo, url); err != nil {
		t.Fatal(err)
	}
	first := demo
	tenant := bgcheck.Tenant{AccountID: demo.AccountID, Mode: bgcheck.ModeTest}
	ep, err := db.FindEndpoint(ctx, tenant, first.ReceiverEndpointID)
	if err != nil || ep.URL != url || len(ep.Events) != 1 || ep.Events[0] != "*" || !strings.HasPrefix(first.ReceiverSecret, "whsec_") {
		t.Fatalf("endpoint %+v, %v", ep, err)
	}
	reread, _, err := EnsureDemo(ctx, db, path) // what the next run reads
	if err != nil || reread.ReceiverEndpointID != first.ReceiverEndpointID || reread.ReceiverSecret != first.ReceiverSecret {
		t.Fatalf("the receiver is not kept in the demo file: %+v %v", reread, err)
	}
	if err := EnsureReceiverEndpoint(ctx, db, path, &reread, url); err != nil || reread.ReceiverEndpointID != first.ReceiverEndpointID {
		t.Fatalf("second run registered another endpoint: %v", err)
	}
	if _, err := db.DeleteEndpoint(ctx, tenant, first.ReceiverEndpointID); err != nil {
		t.Fatal(err)
	}
	if err := EnsureReceiverEndpoint(ctx, db, path, &reread, url); err != nil || reread.ReceiverEndpointID == first.ReceiverEndpointID {
		t.Fatalf("a deleted endpoint was not replaced: %v", err)
	}
	moved := reread
	if err := EnsureReceiverEndpoint(ctx, db, path, &moved, "http://127.0.0.1:9001/webhooks"); err != nil || moved.ReceiverEndpointID == reread.ReceiverEndpointID {
		t.Fatalf("a moved receiver was not registered: %v", err)
	}
}
