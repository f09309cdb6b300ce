package bgcheck

import (
	"encoding/hex"
	"strings"

	"github.com/google/uuid"
)

// Identifier prefixes (API.md: a type prefix followed by a random part).
const (
	PrefixAccount   = "acct"
	PrefixUser      = "usr"
	PrefixAPIKey    = "key"
	PrefixEndpoint  = "we"
	PrefixEvent     = "evt"
	PrefixDelivery  = "dlv"
	PrefixCandidate = "cand"
	PrefixRequest   = "req"
)

// NewID returns prefix_<32 hex digits of a UUIDv7>. UUIDv7 starts with a millisecond timestamp and
// is monotonic within a process, so ids sort by creation time: "newest first" is ORDER BY id DESC
// and the last id of a page is a stable pagination cursor.
func NewID(prefix string) string {
	u := uuid.Must(uuid.NewV7())
	var b [64]byte
	n := copy(b[:], prefix)
	b[n] = '_'
	hex.Encode(b[n+1:], u[:])
	return string(b[:n+1+32])
}

// ValidID reports whether s has the shape NewID produces for prefix. Handlers use it to answer a
// malformed id or cursor without a database round trip.
func ValidID(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"_")
	if !ok || len(rest) != 32 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
