package auth_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

var (
	quiet    = slog.New(slog.NewTextHandler(io.Discard, nil))
	loopback = netip.MustParseAddr("127.0.0.1")
)

// issue stores a new key for a new account and returns the raw key and its record.
func issue(t *testing.T, db *postgres.DB, mutate func(*bgcheck.NewAPIKey)) (string, *bgcheck.APIKey) {
	t.Helper()
	ctx := context.Background()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := auth.NewAPIKey(bgcheck.ModeTest)
	rec := bgcheck.NewAPIKey{AccountID: acct.ID, Mode: bgcheck.ModeTest, Hash: g.Hash, Prefix: g.Prefix, Last4: g.Last4}
	if mutate != nil {
		mutate(&rec)
	}
	k, err := db.CreateAPIKey(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	return g.Raw, k
}

func code(err error) bgcheck.Code {
	if err == nil {
		return ""
	}
	return bgcheck.ErrorCode(err)
}

func TestVerifyOutcomes(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	v := auth.NewVerifier(db, 0, quiet)

	good, rec := issue(t, db, nil)
	if k, err := v.Verify(ctx, good, loopback); err != nil || k.ID != rec.ID {
		t.Fatalf("valid key: %v, %v", k, err)
	}
	past := time.Now().Add(-time.Minute)
	expired, _ := issue(t, db, func(k *bgcheck.NewAPIKey) { k.ExpiresAt = &past })
	fenced, _ := issue(t, db, func(k *bgcheck.NewAPIKey) {
		k.AllowedIPs = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}
	})
	cases := []struct {
		name string
		raw  string
		addr netip.Addr
		want bgcheck.Code
	}{
		{"unknown", auth.NewAPIKey(bgcheck.ModeTest).Raw, loopback, bgcheck.CodeInvalidAPIKey},
		{"malformed", "svc_test_short", loopback, bgcheck.CodeInvalidAPIKey},
		{"expired", expired, loopback, bgcheck.CodeAPIKeyExpired},
		{"outside allowlist", fenced, loopback, bgcheck.CodeIPNotAllowed},
		{"inside v4 allowlist", fenced, netip.MustParseAddr("203.0.113.9"), ""},
		{"inside v6 allowlist", fenced, netip.MustParseAddr("2001:db8::5"), ""},
		{"mapped v4 inside allowlist", fenced, netip.MustParseAddr("::ffff:203.0.113.9"), ""},
	}
	for _, c := range cases {
		if _, err := v.Verify(ctx, c.raw, c.addr); code(err) != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, code(err), err, c.want)
		}
	}
}

// Two verifiers stand for two API instances. Once one revokes a key, the other must refuse it
// within a second, even though it had the key cached.
func TestRevokedKeyRefusedWithinOneSecondOnEveryInstance(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	instanceA := auth.NewVerifier(db, 0, quiet)
	instanceB := auth.NewVerifier(db, 0, quiet)
	raw, rec := issue(t, db, nil)
	for _, v := range []*auth.Verifier{instanceA, instanceB} {
		if _, err := v.Verify(ctx, raw, loopback); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
	}

	if err := db.RevokeAPIKey(ctx, "", rec.ID); err != nil {
		t.Fatal(err)
	}
	instanceA.Forget(rec.ID)
	revokedAt := time.Now()
	if _, err := instanceA.Verify(ctx, raw, loopback); code(err) != bgcheck.CodeInvalidAPIKey {
		t.Fatalf("the revoking instance still accepts the key: %v", err)
	}
	for {
		_, err := instanceB.Verify(ctx, raw, loopback)
		if code(err) == bgcheck.CodeInvalidAPIKey {
			break
		}
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if time.Since(revokedAt) > time.Second {
			t.Fatal("a revoked key still works on another instance more than 1 s after revocation")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Verifying records use only in memory; the database learns of it at the next flush.
func TestLastUsedAtWrittenByFlushNotByRequest(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	v := auth.NewVerifier(db, 0, quiet)
	raw, rec := issue(t, db, nil)
	for range 3 {
		if _, err := v.Verify(ctx, raw, loopback); err != nil {
			t.Fatal(err)
		}
	}
	if lastUsed(t, db, rec.ID) != nil {
		t.Fatal("last_used_at was written on the request path")
	}
	if err := v.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := lastUsed(t, db, rec.ID)
	if got == nil || time.Since(*got) > time.Minute {
		t.Fatalf("after flush last_used_at = %v", got)
	}
}

func lastUsed(t *testing.T, db *postgres.DB, id string) *time.Time {
	var at *time.Time
	if err := db.Pool().QueryRow(context.Background(), `SELECT last_used_at FROM api_keys WHERE id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// countingStore counts lookups to show concurrent cache misses share one query.
type countingStore struct {
	*postgres.DB
	mu      sync.Mutex
	lookups int
}

func (c *countingStore) FindAPIKeyByHash(ctx context.Context, h []byte) (*bgcheck.APIKey, error) {
	c.mu.Lock()
	c.lookups++
	c.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // widen the window in which misses overlap
	return c.DB.FindAPIKeyByHash(ctx, h)
}

func TestConcurrentMissesShareOneLookupAndHitsUseTheCache(t *testing.T) {
	db := pgtest.NewDB(t)
	store := &countingStore{DB: db}
	v := auth.NewVerifier(store, time.Minute, quiet)
	raw, _ := issue(t, db, nil)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := v.Verify(context.Background(), raw, loopback); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for range 100 {
		if _, err := v.Verify(context.Background(), raw, loopback); err != nil {
			t.Fatal(err)
		}
	}
	if store.lookups != 1 {
		t.Fatalf("%d database lookups for one key, want 1", store.lookups)
	}
}
