// Package auth holds the service's credential primitives: API keys (format, hashing, the cached
// verifier) and, for portal users, password hashing and tokens. It knows nothing about HTTP.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"math/big"
	"strings"

	"github.com/bgcheck/bgcheck"
)

// Key prefixes: the prefix of a key sets its mode (API.md §2).
const (
	TestKeyPrefix = "svc_test_"
	LiveKeyPrefix = "svc_live_"
)

// keySecretLen base62 characters carry 43·log2(62) ≈ 256.03 bits.
const keySecretLen = 43

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// GeneratedKey is a new API key: Raw is shown to its owner once and never stored; the rest is.
type GeneratedKey struct {
	Raw    string
	Hash   []byte
	Prefix string
	Last4  string
}

// NewAPIKey generates a key of the given mode with 256 bits of randomness.
func NewAPIKey(mode bgcheck.Mode) GeneratedKey {
	prefix := TestKeyPrefix
	if mode == bgcheck.ModeLive {
		prefix = LiveKeyPrefix
	}
	var b strings.Builder
	b.Grow(len(prefix) + keySecretLen)
	b.WriteString(prefix)
	max := big.NewInt(int64(len(base62)))
	for range keySecretLen {
		n, _ := rand.Int(rand.Reader, max) // unbiased; crypto/rand does not fail
		b.WriteByte(base62[n.Int64()])
	}
	raw := b.String()
	h := HashAPIKey(raw)
	return GeneratedKey{Raw: raw, Hash: h[:], Prefix: prefix, Last4: raw[len(raw)-4:]}
}

// HashAPIKey returns the SHA-256 of a raw key: what is stored and looked up. The key already
// carries 256 random bits, so a slow hash would add cost without adding safety.
func HashAPIKey(raw string) [32]byte {
	var buf [64]byte // keys are 52 bytes: hash from the stack, not a heap copy
	if len(raw) <= len(buf) {
		return sha256.Sum256(buf[:copy(buf[:], raw)])
	}
	return sha256.Sum256([]byte(raw))
}

// ParseAPIKey checks a presented key's shape and returns its mode. A key that fails here is
// answered as invalid without touching the database.
func ParseAPIKey(raw string) (bgcheck.Mode, bool) {
	var mode bgcheck.Mode
	var secret string
	switch {
	case strings.HasPrefix(raw, TestKeyPrefix):
		mode, secret = bgcheck.ModeTest, raw[len(TestKeyPrefix):]
	case strings.HasPrefix(raw, LiveKeyPrefix):
		mode, secret = bgcheck.ModeLive, raw[len(LiveKeyPrefix):]
	default:
		return "", false
	}
	if len(secret) != keySecretLen {
		return "", false
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return "", false
		}
	}
	return mode, true
}
