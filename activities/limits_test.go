package activities

import "testing"

func TestInFlightLimitsPerEndpointAndPerAccount(t *testing.T) {
	l := NewInFlightLimits(2, 3)
	if !l.tryAcquire("acct_a", "we_1") || !l.tryAcquire("acct_a", "we_1") {
		t.Fatal("the first two attempts to an endpoint were refused")
	}
	if l.tryAcquire("acct_a", "we_1") {
		t.Fatal("a third attempt to the endpoint was let through")
	}
	if !l.tryAcquire("acct_a", "we_2") {
		t.Fatal("another endpoint of the account was refused")
	}
	if l.tryAcquire("acct_a", "we_3") {
		t.Fatal("a fourth attempt of the account was let through")
	}
	if !l.tryAcquire("acct_b", "we_9") {
		t.Fatal("another account was refused")
	}
	l.release("acct_a", "we_1")
	if !l.tryAcquire("acct_a", "we_3") {
		t.Fatal("a place given back was not reused")
	}
	for _, p := range [][2]string{{"acct_a", "we_1"}, {"acct_a", "we_2"}, {"acct_a", "we_3"}, {"acct_b", "we_9"}} {
		l.release(p[0], p[1])
	}
	if len(l.endpoints) != 0 || len(l.accounts) != 0 {
		t.Fatalf("counts left after every release: %v %v", l.endpoints, l.accounts)
	}
	var none *InFlightLimits
	if !none.tryAcquire("a", "b") {
		t.Fatal("no limits refused an attempt")
	}
}
