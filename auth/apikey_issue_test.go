package auth_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
)

func TestIssueAPIKey(t *testing.T) {
	now := time.Date(2026, 11, 21, 5, 24, 0, 0, time.UTC)
	str := func(s string) *string { return &s }

	k, err := auth.IssueAPIKey(auth.KeySpec{
		Name: "ci", Mode: bgcheck.ModeLive,
		Scopes:     []string{"webhooks:read", "candidates:read", "webhooks:read"},
		ExpiresAt:  str("2027-01-01T01:00:00+01:00"),
		AllowedIPs: []string{"10.1.2.3/8", " 2001:db8::1 ", "::ffff:192.0.2.1", "10.0.0.0/8"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	if mode, ok := auth.ParseAPIKey(k.Raw); !ok || mode != bgcheck.ModeLive || k.Prefix != auth.LiveKeyPrefix || !strings.HasSuffix(k.Raw, k.Last4) {
		t.Fatalf("key %q (prefix %q, last4 %q)", k.Raw, k.Prefix, k.Last4)
	}
	if h := auth.HashAPIKey(k.Raw); string(h[:]) != string(k.Hash) {
		t.Fatal("the hash is not the raw key's")
	}
	if !slices.Equal(k.Scopes, []string{"webhooks:read", "candidates:read"}) {
		t.Errorf("scopes %v: want repeats dropped", k.Scopes)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128"), netip.MustParsePrefix("192.0.2.1/32")}
	if !slices.Equal(k.AllowedIPs, want) {
		t.Errorf("allowed_ips %v, want %v (masked, unmapped, without repeats)", k.AllowedIPs, want)
	}
	if k.ExpiresAt == nil || !k.ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || k.ExpiresAt.Location() != time.UTC {
		t.Errorf("expires_at %v", k.ExpiresAt)
	}

	full, err := auth.IssueAPIKey(auth.KeySpec{Mode: bgcheck.ModeTest}, now)
	if err != nil || full.Scopes == nil || len(full.Scopes) != 0 || full.AllowedIPs == nil || len(full.AllowedIPs) != 0 || full.ExpiresAt != nil {
		t.Fatalf("a bare spec: %+v, %v; want no scopes, no allowlist, no expiry", full, err)
	}
	if full.Raw == k.Raw || !strings.HasPrefix(full.Raw, auth.TestKeyPrefix) {
		t.Fatalf("keys %q and %q", full.Raw, k.Raw)
	}

	for name, c := range map[string]struct {
		spec  auth.KeySpec
		field string
	}{
		"no mode":        {auth.KeySpec{}, "mode"},
		"unknown mode":   {auth.KeySpec{Mode: "prod"}, "mode"},
		"unknown scope":  {auth.KeySpec{Mode: "test", Scopes: []string{"admin:all"}}, "scopes"},
		"past expiry":    {auth.KeySpec{Mode: "test", ExpiresAt: str("2026-11-21T05:24:00Z")}, "expires_at"},
		"not a time":     {auth.KeySpec{Mode: "test", ExpiresAt: str("tomorrow")}, "expires_at"},
		"empty time":     {auth.KeySpec{Mode: "test", ExpiresAt: str("")}, "expires_at"},
		"not an address": {auth.KeySpec{Mode: "test", AllowedIPs: []string{"10.0.0.1", "example.com"}}, "allowed_ips"},
		"zoned address":  {auth.KeySpec{Mode: "test", AllowedIPs: []string{"fe80::1%eth0"}}, "allowed_ips"},
		"long name":      {auth.KeySpec{Mode: "test", Name: strings.Repeat("n", auth.MaxKeyNameLength+1)}, "name"},
		"long allowlist": {auth.KeySpec{Mode: "test", AllowedIPs: slices.Repeat([]string{"10.0.0.1"}, auth.MaxKeyAllowedIPs+1)}, "allowed_ips"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := auth.IssueAPIKey(c.spec, now)
			var fields []string
			if e, ok := err.(*bgcheck.Error); ok && e.Code == bgcheck.CodeValidationFailed {
				for _, f := range e.Fields {
					fields = append(fields, f.Field)
				}
			}
			if !slices.Equal(fields, []string{c.field}) {
				t.Fatalf("%v: want exactly one error, on %s", err, c.field)
			}
		})
	}
}
