package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
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
		b, err := base64.StdEncoding.DecodeString(raw) // the alphabet Standard Webhooks libraries decode
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

// The vector published with the Standard Webhooks specification (and svix's libraries): an
// independent computation of the same scheme.
func TestSignStandardMatchesThePublishedVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	ts := time.Unix(1614265330, 0)
	got, err := SignStandard(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("SignStandard = %q, %v", got, err)
	}
	if err := VerifyStandard(secret, body, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,bm90IGl0 "+got, 0, ts.Add(4*time.Minute)); err != nil {
		t.Fatalf("the vector does not verify among several signatures: %v", err)
	}
}

// A signature computed here with crypto/hmac directly, for a secret NewSecret makes: the key is
// the base64 after whsec_, the message "{id}.{timestamp}.{body}".
func TestSignStandardKeyRule(t *testing.T) {
	secret := NewSecret()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) != 32 {
		t.Fatalf("a new secret %q does not decode to 32 bytes in standard base64: %v", secret, err)
	}
	body := []byte(`{"id":"evt_1"}`)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("evt_1.1700000000." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got, _ := SignStandard(secret, "evt_1", time.Unix(1700000000, 0), body); got != want {
		t.Fatalf("SignStandard = %q, want %q", got, want)
	}
	now := time.Unix(1700000000, 0)
	for name, tc := range map[string]struct {
		secret, id, ts, sig string
		now                 time.Time
		want                error
	}{
		"valid":             {secret, "evt_1", "1700000000", want, now, nil},
		"old secret alone":  {NewSecret(), "evt_1", "1700000000", want, now, ErrInvalidSignature},
		"another id":        {secret, "evt_2", "1700000000", want, now, ErrInvalidSignature},
		"timestamp changed": {secret, "evt_1", "1700000001", want, now, ErrInvalidSignature},
		"too old":           {secret, "evt_1", "1700000000", want, now.Add(6 * time.Minute), ErrTimestampOutOfTolerance},
		"from the future":   {secret, "evt_1", "1700000000", want, now.Add(-6 * time.Minute), ErrTimestampOutOfTolerance},
		"no headers":        {secret, "", "", "", now, ErrMissingHeaders},
	} {
		if err := VerifyStandard(tc.secret, body, tc.id, tc.ts, tc.sig, 0, tc.now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// A URL-safe secret of before the switch keeps working.
	legacy := "whsec_" + base64.RawURLEncoding.EncodeToString(key)
	if k, err := StandardKey(legacy); err != nil || string(k) != string(key) {
		t.Fatalf("the URL-safe form: %v", err)
	}
}
