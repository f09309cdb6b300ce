package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com) every delivery carries beside
// X-Service-Signature, so that receivers get replay protection and can use that spec's libraries.
const (
	StandardIDHeader        = "webhook-id"        // the event's id: the same on every attempt
	StandardTimestampHeader = "webhook-timestamp" // Unix seconds of this attempt
	StandardSignatureHeader = "webhook-signature" // "v1,<base64 HMAC>", space-separated when several
	standardVersion         = "v1,"
)

// DefaultTolerance is how far a Standard Webhooks timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// StandardKey returns the HMAC key of a secret for Standard Webhooks signatures: the bytes the
// part after "whsec_" encodes in base64 (standard alphabet, as that spec's libraries decode it;
// secrets made before the switch to it are in the URL-safe alphabet, which decodes as well). The
// X-Service-Signature key is different: the whole secret string's bytes.
func StandardKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, errors.New("webhook: a secret starts with whsec_")
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := e.DecodeString(enc); err == nil {
			return key, nil
		}
	}
	return nil, errors.New("webhook: the secret after whsec_ is not base64")
}

// SignStandard returns the webhook-signature value for one secret: "v1," and the base64
// HMAC-SHA256, keyed with StandardKey(secret), of "{id}.{timestamp}.{body}".
func SignStandard(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := StandardKey(secret)
	if err != nil {
		return "", err
	}
	return standardVersion + base64.StdEncoding.EncodeToString(standardMAC(key, id, timestamp.Unix(), body)), nil
}

// SignStandardAll returns the webhook-signature value for each secret, newest first,
// space-separated, as the Standard Webhooks specification has several signatures.
func SignStandardAll(secrets []string, id string, timestamp time.Time, body []byte) (string, error) {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sig, err := SignStandard(s, id, timestamp, body)
		if err != nil {
			return "", err
		}
		sigs[i] = sig
	}
	return strings.Join(sigs, " "), nil
}

func standardMAC(key []byte, id string, ts int64, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return mac.Sum(nil)
}

// Errors of VerifyStandard.
var (
	ErrTimestampOutOfTolerance = errors.New("webhook: webhook-timestamp is too far from now (a replay, or a clock off)")
	ErrMissingHeaders          = errors.New("webhook: webhook-id, webhook-timestamp or webhook-signature is missing")
)

// VerifyStandard checks a delivery's Standard Webhooks headers against the raw body: the timestamp
// must be within tolerance of now (DefaultTolerance when 0), and one of the header's signatures
// must match the secret, in constant time.
func VerifyStandard(secret string, body []byte, id, timestamp, signatures string, tolerance time.Duration, now time.Time) error {
	if id == "" || timestamp == "" || signatures == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrInvalidSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrTimestampOutOfTolerance
	}
	key, err := StandardKey(secret)
	if err != nil {
		return err
	}
	want := standardMAC(key, id, ts, body)
	for _, sig := range strings.Fields(signatures) {
		enc, ok := strings.CutPrefix(sig, standardVersion)
		if !ok {
			continue
		}
		if got, err := base64.StdEncoding.DecodeString(enc); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrInvalidSignature
}
