package auth

import (
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

var (
	oldKey = []byte("the old signing key, thirty-two bytes or more")
	newKey = []byte("the new signing key, thirty-two bytes or more")
)

func subject() Subject {
	return Subject{UserID: "usr_1", AccountID: "acct_1", Role: bgcheck.RoleAdmin, SessionID: "ses_1"}
}

// During a rotation the new key signs and the old one still verifies; once the old key is dropped
// its tokens are refused.
func TestKeyRotation(t *testing.T) {
	before, _ := NewTokens(oldKey)
	old, err := before.Issue(subject(), AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	during, _ := NewTokens(newKey, oldKey)
	if c, err := during.Parse(old.Token, AccessToken); err != nil || c.Subject != "usr_1" {
		t.Fatalf("an old-key token during the rotation: %v", err)
	}
	fresh, _ := during.Issue(subject(), AccessToken)
	after, _ := NewTokens(newKey)
	if _, err := after.Parse(fresh.Token, AccessToken); err != nil {
		t.Fatalf("a new-key token after the rotation: %v", err)
	}
	if _, err := after.Parse(old.Token, AccessToken); bgcheck.ErrorCode(err) != bgcheck.CodeInvalidToken {
		t.Fatalf("an old-key token after the rotation: %v", err)
	}
	if _, err := NewTokens([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}

func TestExpiryAndType(t *testing.T) {
	tok, _ := NewTokens(newKey)
	now := time.Now()
	tok.now = func() time.Time { return now }
	refresh, _ := tok.Issue(subject(), RefreshToken)
	access, _ := tok.Issue(subject(), AccessToken)
	if access.ExpiresAt.Sub(now.Truncate(time.Second)) != 15*time.Minute || refresh.ExpiresAt.Sub(now.Truncate(time.Second)) != 7*24*time.Hour {
		t.Fatal("lifetimes are not 900 s and 604800 s")
	}
	if _, err := tok.Parse(refresh.Token, AccessToken); bgcheck.ErrorCode(err) != bgcheck.CodeInvalidToken {
		t.Fatalf("refresh as access: %v", err)
	}
	if _, err := tok.Parse(access.Token, RefreshToken); bgcheck.ErrorCode(err) != bgcheck.CodeInvalidToken {
		t.Fatalf("access as refresh: %v", err)
	}
	tok.now = func() time.Time { return now.Add(16 * time.Minute) }
	if _, err := tok.Parse(access.Token, AccessToken); bgcheck.ErrorCode(err) != bgcheck.CodeTokenExpired {
		t.Fatalf("after 16 minutes: %v", err)
	}
	if _, err := tok.Parse(refresh.Token, RefreshToken); err != nil {
		t.Fatalf("the refresh token after 16 minutes: %v", err)
	}
}

// Instances' clocks differ a little: a token issued by a clock ahead of the checker's, or just
// expired by one behind it, is accepted within ClockLeeway and refused beyond it.
func TestClockLeeway(t *testing.T) {
	issuer, _ := NewTokens(newKey)
	checker, _ := NewTokens(newKey)
	now := time.Now()
	issuer.now = func() time.Time { return now.Add(10 * time.Second) } // the issuer runs fast
	checker.now = func() time.Time { return now }
	fast, _ := issuer.Issue(subject(), AccessToken)
	if _, err := checker.Parse(fast.Token, AccessToken); err != nil {
		t.Fatalf("a token issued 10 s ahead: %v", err)
	}
	checker.now = func() time.Time { return now.Add(AccessTTL + 20*time.Second) }
	if _, err := checker.Parse(fast.Token, AccessToken); err != nil {
		t.Fatalf("a token expired 10 s ago by the checker's clock: %v", err)
	}
	checker.now = func() time.Time { return now.Add(AccessTTL + time.Minute) }
	if _, err := checker.Parse(fast.Token, AccessToken); bgcheck.ErrorCode(err) != bgcheck.CodeTokenExpired {
		t.Fatalf("a token expired 50 s ago: %v", err)
	}
}
