package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

func TestQuotaSet(t *testing.T) {
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "admin@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ctl(t, "", "quota", "set", "--account", acct.ID, "--limit", "25")
	if err != nil {
		t.Fatal(err)
	}
	var q bgcheck.Quota
	if err := json.Unmarshal([]byte(out), &q); err != nil || q.Limit != 25 || q.Remaining != 25 {
		t.Fatalf("printed %s (%v)", out, err)
	}
	if got, err := db.FindQuota(ctx, bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}); err != nil || got.Limit != 25 {
		t.Fatalf("the test mode's quota %+v, %v", got, err)
	}
	if _, err := ctl(t, "", "quota", "set", "--account", acct.ID, "--limit", "-3"); err == nil || !strings.Contains(err.Error(), "--limit") {
		t.Fatalf("a negative limit: %v", err)
	}
	if _, err := ctl(t, "", "quota", "set", "--account", "acct_00000000000000000000000000000000", "--limit", "3"); err == nil ||
		!strings.Contains(err.Error(), "no account") {
		t.Fatalf("an unknown account: %v", err)
	}
}
