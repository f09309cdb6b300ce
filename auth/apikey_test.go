package auth

import (
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck"
)

func TestNewAPIKeyFormat(t *testing.T) {
	for _, mode := range []bgcheck.Mode{bgcheck.ModeTest, bgcheck.ModeLive} {
		k := NewAPIKey(mode)
		wantPrefix := map[bgcheck.Mode]string{bgcheck.ModeTest: "svc_test_", bgcheck.ModeLive: "svc_live_"}[mode]
		if !strings.HasPrefix(k.Raw, wantPrefix) || len(k.Raw) != len(wantPrefix)+43 {
			t.Fatalf("key %q: want %s and 43 base62 characters", k.Raw, wantPrefix)
		}
		got, ok := ParseAPIKey(k.Raw)
		if !ok || got != mode {
			t.Fatalf("ParseAPIKey(%q) = %v, %v", k.Raw, got, ok)
		}
		h := HashAPIKey(k.Raw)
		if string(k.Hash) != string(h[:]) || k.Last4 != k.Raw[len(k.Raw)-4:] || k.Prefix != wantPrefix {
			t.Fatalf("generated key's hash, prefix or last4 disagree with the raw key")
		}
	}
	if NewAPIKey(bgcheck.ModeTest).Raw == NewAPIKey(bgcheck.ModeTest).Raw {
		t.Fatal("two keys are equal")
	}
}

func TestParseAPIKeyRefusesMalformed(t *testing.T) {
	good := NewAPIKey(bgcheck.ModeLive).Raw
	for _, raw := range []string{
		"", "svc_live_", "svc_prod_" + good[9:], "sk_live_" + good[9:], good[:len(good)-1], good + "A",
		good[:20] + "-" + good[21:], good[:20] + "é" + good[22:], " " + good, "SVC_LIVE_" + good[9:],
	} {
		if _, ok := ParseAPIKey(raw); ok {
			t.Errorf("ParseAPIKey(%q) accepted a malformed key", raw)
		}
	}
}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q does not record OWASP's argon2id parameters", h)
	}
	if err := CheckPassword(h, "correct horse battery"); err != nil {
		t.Fatalf("right password refused: %v", err)
	}
	if err := CheckPassword(h, "correct horse batterY"); err != ErrPasswordMismatch {
		t.Fatalf("wrong password: %v", err)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if err := CheckPassword("$argon2i$v=19$m=1,t=1,p=1$AA$AA", "x"); err == nil {
		t.Fatal("a non-argon2id hash was accepted")
	}
}
