package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

func ssoAccount(t *testing.T, db *postgres.DB, domain string) *bgcheck.SSOConnection {
	t.Helper()
	ctx := context.Background()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@" + domain, Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateSSOConnection(ctx, postgres.NewSSOConnection{AccountID: acct.ID, Protocol: bgcheck.SSOProtocolOIDC,
		Enabled: true, JITProvisioning: true, Domains: []string{domain}, OIDCIssuer: "https://idp.example.com",
		OIDCClientID: "client", OIDCClientSecret: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Ten first sign-ins of one person at once: one creates the admin, the others find them.
func TestConcurrentFirstSSOSignInsMakeOneUser(t *testing.T) {
	db := pgtest.NewDB(t)
	c := ssoAccount(t, db, "acme.test")
	id := bgcheck.SSOIdentity{Subject: "sub-1", Email: "new@acme.test", EmailVerified: true}
	var wg sync.WaitGroup
	users := make([]string, 10)
	errs := make([]error, 10)
	for i := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := db.SignInWithSSO(context.Background(), c, id)
			if err == nil {
				users[i] = res.User.ID
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
		if users[i] != users[0] {
			t.Fatalf("sign-ins became users %v", users)
		}
	}
	var n int
	if err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM sso_identities`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d identities (%v)", n, err)
	}
}

func TestSSOLoginStateIsSpentOnceAndOnlyByItsBrowser(t *testing.T) {
	db := pgtest.NewDB(t)
	c := ssoAccount(t, db, "acme.test")
	ctx := context.Background()
	st := postgres.SSOLoginState{StateHash: []byte("state"), BindingHash: []byte("browser"), ConnectionID: c.ID,
		Purpose: postgres.SSOPurposeSignIn, ExpiresAt: time.Now().Add(time.Minute)}
	if err := db.CreateSSOLoginState(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConsumeSSOLoginState(ctx, []byte("state"), []byte("browser"), "ssoc_other"); bgcheck.ErrorCode(err) != bgcheck.CodeSSOFailed {
		t.Fatalf("another connection's route spent it: %v", err)
	}
	st.StateHash = []byte("state2")
	if err := db.CreateSSOLoginState(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConsumeSSOLoginState(ctx, []byte("state2"), []byte("browser"), c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConsumeSSOLoginState(ctx, []byte("state2"), []byte("browser"), c.ID); bgcheck.ErrorCode(err) != bgcheck.CodeSSOFailed {
		t.Fatalf("spent twice: %v", err)
	}
	st.StateHash, st.ExpiresAt = []byte("old"), time.Now().Add(-time.Second)
	if err := db.CreateSSOLoginState(ctx, st); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ConsumeSSOLoginState(ctx, []byte("old"), []byte("browser"), c.ID); bgcheck.ErrorCode(err) != bgcheck.CodeSSOFailed {
		t.Fatalf("an expired state was spent: %v", err)
	}
}
