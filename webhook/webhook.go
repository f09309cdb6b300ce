// Package webhook is the wire format of bgcheck's webhooks: the event types, the envelope every
// delivery carries, endpoint secrets, and the X-Service-Signature header (API.md §6). Receivers
// may import it to verify deliveries; it depends on nothing in the service but the domain
// package, which renders the envelopes (bgcheck.EncodeEnvelope).
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck"
)

// The event types of API.md §6 (package bgcheck defines them), in the order the spec lists them.
const (
	EventCheckCreated           = bgcheck.EventCheckCreated
	EventCheckCompleted         = bgcheck.EventCheckCompleted
	EventCheckFailed            = bgcheck.EventCheckFailed
	EventReportReady            = bgcheck.EventReportReady
	EventAdverseActionCreated   = bgcheck.EventAdverseActionCreated
	EventAdverseActionFinalized = bgcheck.EventAdverseActionFinalized
	EventDisputeFiled           = bgcheck.EventDisputeFiled
	EventDisputeResolved        = bgcheck.EventDisputeResolved
	EventCandidateUpdated       = bgcheck.EventCandidateUpdated
	AllEvents                   = "*" // subscribes an endpoint to every type
	SignatureHeader             = "X-Service-Signature"
	signaturePrefix             = "sha256="
	secretPrefix                = "whsec_"
	secretBytes                 = 32 // 256 bits
)

// EventTypes lists every event type an endpoint may subscribe to.
var EventTypes = bgcheck.EventTypes

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool { return bgcheck.ValidEventType(t) }

// NewSecret returns a fresh endpoint secret: "whsec_" and 256 random bits in base64 (standard
// alphabet, padded), the form Standard Webhooks libraries decode. The X-Service-Signature key is
// the whole string's bytes, prefix included, exactly as the caller receives it; the Standard
// Webhooks key is the decoded bits (StandardKey).
func NewSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return secretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// Envelope is the JSON body of every delivery (product spec §2.2, API.md §6).
type Envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Sign returns the X-Service-Signature value for body: "sha256=" and the lowercase hex
// HMAC-SHA256 of the raw bytes keyed with the endpoint secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// SignAll returns the X-Service-Signature value for body signed with each secret, newest first,
// joined by commas: during a rotation's overlap a receiver holding either secret finds its own.
// With one secret it is Sign's value exactly.
func SignAll(secrets []string, body []byte) string {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sigs[i] = Sign(s, body)
	}
	return strings.Join(sigs, ",")
}

// ErrInvalidSignature is returned by Verify when the header does not match the body.
var ErrInvalidSignature = errors.New("webhook: signature does not match the body")

// Verify checks an X-Service-Signature header against the raw request body, in constant time:
// one of its comma-separated signatures (two while a rotated secret overlaps) must match.
// Pass the body exactly as received: re-serialized JSON will not match.
func Verify(secret string, body []byte, header string) error {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Split(header, ",") {
		got, ok := strings.CutPrefix(strings.TrimSpace(sig), signaturePrefix)
		if !ok {
			continue
		}
		if gotMAC, err := hex.DecodeString(got); err == nil && hmac.Equal(gotMAC, want) {
			return nil
		}
	}
	return ErrInvalidSignature
}
