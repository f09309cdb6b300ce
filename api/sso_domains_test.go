package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
)

// TestSSODomainsAreProvenInDNS: claiming a domain routes nobody to an IdP until the account
// publishes the claim's TXT record; then the domain is its connection's alone.
func TestSSODomainsAreProvenInDNS(t *testing.T) {
	s := newSSOScene(t)
	op := idptest.StartOIDC(t)
	create := func(token, domain string) *response {
		return s.bearer("POST", "/api/v1/admin/sso/connections", token, map[string]any{
			"protocol": "oidc", "enabled": true, "domains": []string{domain},
			"oidc": map[string]any{"issuer": op.Issuer, "client_id": "bgcheck", "client_secret": "client-secret"}})
	}
	a := decode[ssoConnectionJSON](t, create(s.adminA, "acme.test"), http.StatusCreated)
	if a.JITProvisioning {
		t.Fatal("a new connection creates admins on first sign-in unless asked to")
	}
	if len(a.DomainVerification) != 1 {
		t.Fatalf("domain verification %+v", a.DomainVerification)
	}
	claimA := a.DomainVerification[0]
	if claimA.Status != "pending" || claimA.RecordType != "TXT" || claimA.RecordName != "_bgcheck-challenge.acme.test" ||
		!strings.HasPrefix(claimA.RecordValue, "bgcheck-domain-verification=") {
		t.Fatalf("claim %+v", claimA)
	}
	// Pending: the e-mail-first step does not send anyone to the IdP, but the admin can test
	// the IdP's side already.
	wantProblem(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "alice@acme.test"}), 404, bgcheck.CodeSSONotConfigured)
	op.AddClient("bgcheck", "client-secret", a.OIDC.RedirectURI)
	op.AddUser("alice", "alice-password", "alice@acme.test", true)
	tested := s.testConnection(a, "alice", "alice-password")
	if tested.LastTest == nil || !tested.LastTest.OK || !strings.Contains(tested.LastTest.Detail, "once acme.test is verified") ||
		strings.Contains(tested.LastTest.Detail, "created") || strings.Contains(tested.LastTest.Detail, "refused") {
		t.Fatalf("test before verification: %+v", tested.LastTest)
	}

	// Another account may claim the domain too while nobody has proven it, but nobody can
	// claim a public mail service.
	b := decode[ssoConnectionJSON](t, create(s.adminB, "acme.test"), http.StatusCreated)
	if b.DomainVerification[0].RecordValue == claimA.RecordValue {
		t.Fatal("two claims share a token")
	}
	wantFieldError(t, create(s.adminB, "gmail.com"), "domains")

	// No record, or a record with another claim's token, proves nothing.
	verify := func(token, id string) *response {
		return s.bearer("POST", "/api/v1/admin/sso/connections/"+id+"/verify-domains", token, nil)
	}
	if got := decode[ssoConnectionJSON](t, verify(s.adminA, a.ID), 200); got.DomainVerification[0].Status != "pending" {
		t.Fatalf("verified without a record: %+v", got.DomainVerification)
	}
	s.dns.Publish(claimA.RecordName, b.DomainVerification[0].RecordValue)
	if got := decode[ssoConnectionJSON](t, verify(s.adminA, a.ID), 200); got.DomainVerification[0].Status != "pending" {
		t.Fatalf("verified by another claim's record: %+v", got.DomainVerification)
	}
	// B published first, and verifies first: A's claim can no longer succeed.
	decode[ssoConnectionJSON](t, verify(s.adminB, b.ID), 200)
	s.dns.Publish(claimA.RecordName, claimA.RecordValue)
	wantProblem(t, verify(s.adminA, a.ID), 409, bgcheck.CodeDomainTaken)
	// Nor can A claim it again, or see B's connection.
	wantProblem(t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+a.ID, s.adminA, map[string]any{"domains": []string{"acme.test", "acme2.test"}}),
		409, bgcheck.CodeDomainTaken)
	wantProblem(t, verify(s.adminA, b.ID), 404, bgcheck.CodeNotFound)

	var route struct {
		ConnectionID string `json:"connection_id"`
	}
	r := s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "alice@acme.test"})
	decodeInto(t, string(r.Body), &route)
	if route.ConnectionID != b.ID {
		t.Fatalf("acme.test routes to %q, want B's %s", route.ConnectionID, b.ID)
	}

	// Changing the list keeps what was proven: B adds a domain, which starts pending.
	got := decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+b.ID, s.adminB,
		map[string]any{"domains": []string{"acme.test", "b.test"}}), 200)
	status := map[string]string{}
	for _, d := range got.DomainVerification {
		status[d.Domain] = d.Status
	}
	if status["acme.test"] != "verified" || status["b.test"] != "pending" {
		t.Fatalf("after the change: %v", status)
	}
}

// TestSSOEnforcementLocksNobodyOut: SSO cannot be required while an admin's e-mail domain has
// no enabled connection that verified it, nor can a connection change strand one afterwards.
func TestSSOEnforcementLocksNobodyOut(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.oidcConnection()
	s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	s.user(s.a.ID, "contractor@elsewhere.test", bgcheck.RoleAdmin, adminPassword)

	r := s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA, map[string]any{"required": true})
	p := wantProblem(t, r, 422, bgcheck.CodeValidationFailed)
	if len(p.Errors) != 1 || p.Errors[0].Field != "required" || !strings.Contains(p.Errors[0].Message, "contractor@elsewhere.test") {
		t.Fatalf("refusal %+v", p.Errors)
	}
	// Naming the contractor the break-glass admin leaves nobody stranded.
	contractor, _, _ := s.db.FindUserByEmail(t.Context(), "contractor@elsewhere.test")
	decode[map[string]any](t, s.bearer("PATCH", "/api/v1/admin/sso/enforcement", s.adminA,
		map[string]any{"required": true, "break_glass_user_id": contractor.ID}), 200)
	// Now the owner (acme.test) depends on the connection: dropping its domain is refused.
	p = wantProblem(t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"domains": []string{"acme-eu.test"}}),
		409, bgcheck.CodeSSOInUse)
	if !strings.Contains(p.Detail, "owner@acme.test") {
		t.Fatalf("detail %q", p.Detail)
	}
}

// TestSSOSessionEndsWithItsConnection: a session signed in through a connection is not
// refreshed once the connection is disabled, and a connection pointed at another identity
// provider forgets the identities of the first.
func TestSSOSessionEndsWithItsConnection(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.oidcConnection()
	pair, _ := s.exchange(s.oidcSignIn(s.browser(), "alice@acme.test", "alice", "alice-password"))
	pair = decode[pairJSON](t, s.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 200)

	decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 200)
	wantProblem(t, s.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 401, bgcheck.CodeInvalidToken)

	other := idptest.StartOIDC(t)
	got := decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{
		"enabled": true, "oidc": map[string]any{"issuer": other.Issuer}}), 200)
	if s.countIdentities() != 0 || got.LastSignInAt != nil {
		t.Fatalf("after a new issuer: %d identities, last sign-in %v", s.countIdentities(), got.LastSignInAt)
	}
}
