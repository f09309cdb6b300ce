package webhook

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

func TestSignMatchesKnownHMAC(t *testing.T) {
	// Computed independently: printf '%s' '{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test
	const want = "sha256=030fa3b2413d1993c551364bd53bb9b3edb5c0c34d55dba6ada6041245632811"
	got := Sign("whsec_test", []byte(`{"id":"evt_1"}`))
	if !strings.HasPrefix(got, "sha256=") || len(got) != len("sha256=")+64 || strings.ToLower(got) != got {
		t.Fatalf("Sign = %q, want sha256= and 64 lowercase hex digits", got)
	}
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"id":"evt_1","type":"check.completed"}`)
	header := Sign("whsec_a", body)
	if err := Verify("whsec_a", body, header); err != nil {
		t.Fatalf("Verify of a correct signature: %v", err)
	}
	bad := map[string]struct {
		secret string
		body   []byte
		header string
	}{
		"other secret":     {"whsec_b", body, header},
		"tampered body":    {"whsec_a", []byte(`{"id":"evt_2","type":"check.completed"}`), header},
		"reserialized":     {"whsec_a", []byte(`{"id": "evt_1", "type": "check.completed"}`), header},
		"no prefix":        {"whsec_a", body, strings.TrimPrefix(header, "sha256=")},
		"not hex":          {"whsec_a", body, "sha256=zz"},
		"empty":            {"whsec_a", body, ""},
		"truncated digest": {"whsec_a", body, header[:len(header)-2]},
	}
	for name, c := range bad {
		if err := Verify(c.secret, c.body, c.header); err != ErrInvalidSignature {
			t.Errorf("%s: Verify = %v, want ErrInvalidSignature", name, err)
		}
	}
}

func TestNewSecretHas256RandomBits(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := NewSecret()
		raw, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q lacks whsec_", s)
		}
		b, err := base64.RawURLEncoding.DecodeString(raw)
		if err != nil || len(b) < 32 {
			t.Fatalf("secret %q does not carry 32 random bytes: %v", s, err)
		}
		if seen[s] {
			t.Fatal("secret repeated")
		}
		seen[s] = true
	}
}

func TestEncodeEnvelope(t *testing.T) {
	at := time.Date(2026, 11, 21, 5, 24, 0, 0, time.FixedZone("X", 3600))
	body, err := bgcheck.EncodeEnvelope("evt_1", EventCheckCompleted, at, map[string]string{"status": "complete"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"evt_1","type":"check.completed","created_at":"2026-11-21T04:24:00Z","data":{"status":"complete"}}`
	if string(body) != want {
		t.Fatalf("envelope = %s\nwant       %s", body, want)
	}
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.ID != "evt_1" {
		t.Fatalf("envelope does not decode: %v", err)
	}
}
