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

func TestSSOVerifyDomain(t *testing.T) {
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
	c, err := db.CreateSSOConnection(ctx, postgres.NewSSOConnection{AccountID: acct.ID, Protocol: bgcheck.SSOProtocolSAML,
		Domains: []string{"acme.test"}, SAMLIdPEntityID: "https://idp.acme.test", SAMLIdPMetadataXML: "<EntityDescriptor/>"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.FindSSOConnectionByDomain(ctx, "acme.test"); bgcheck.ErrorCode(err) != bgcheck.CodeNotFound {
		t.Fatalf("a pending domain routes: %v", err)
	}
	out, err := ctl(t, "", "sso", "verify-domain", "--connection", c.ID, "--domain", "ACME.test")
	if err != nil {
		t.Fatal(err)
	}
	var printed struct {
		Verified []string `json:"verified_domains"`
	}
	if err := json.Unmarshal([]byte(out), &printed); err != nil || len(printed.Verified) != 1 || printed.Verified[0] != "acme.test" {
		t.Fatalf("printed %s (%v)", out, err)
	}
	if got, err := db.FindSSOConnectionByDomain(ctx, "acme.test"); err != nil || got.ID != c.ID {
		t.Fatalf("after verifying, acme.test routes to %v, %v", got, err)
	}
	if _, err := ctl(t, "", "sso", "verify-domain", "--connection", c.ID, "--domain", "other.test"); err == nil ||
		!strings.Contains(err.Error(), "no pending claim") {
		t.Fatalf("an unclaimed domain: %v", err)
	}
}
