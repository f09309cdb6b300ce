package auth

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/netguard"
)

// Bounds on what a key may carry, so a key record stays small enough to check on every request.
const (
	MaxKeyNameLength = 100
	MaxKeyAllowedIPs = 100
)

// KeySpec is an API key as an admin (through the API) or the operator (through bgcheckctl) asks
// for it, unchecked: a mode, and optionally a name, scopes, an expiry (RFC 3339; nil for none) and
// an IP allowlist of addresses or CIDR prefixes.
type KeySpec struct {
	Name       string
	Mode       bgcheck.Mode
	Scopes     []string
	ExpiresAt  *string
	AllowedIPs []string
}

// IssuedKey is a checked KeySpec with its freshly generated key: everything to store, and Raw to
// show its owner once.
type IssuedKey struct {
	GeneratedKey
	Name       string
	Mode       bgcheck.Mode
	Scopes     []string       // valid and without repeats; empty means full access
	AllowedIPs []netip.Prefix // masked and without repeats; empty means any address
	ExpiresAt  *time.Time     // UTC, after the issuing time; nil means never
}

// IssueAPIKey checks spec at now and generates its key. It is the one place both issuers apply
// the rules of API.md §2, so a key the CLI issues and one the admin API issues obey the same ones.
// A spec that cannot be honoured is a bgcheck.CodeValidationFailed error naming each bad field as
// the admin API calls it: name, mode, scopes, expires_at, allowed_ips.
func IssueAPIKey(spec KeySpec, now time.Time) (IssuedKey, error) {
	var fields []bgcheck.FieldError
	bad := func(field, msg string) { fields = append(fields, bgcheck.FieldError{Field: field, Message: msg}) }

	switch {
	case spec.Mode == "":
		bad("mode", "is required")
	case !spec.Mode.Valid():
		bad("mode", "must be test or live")
	}
	if utf8.RuneCountInString(spec.Name) > MaxKeyNameLength {
		bad("name", fmt.Sprintf("must be at most %d characters", MaxKeyNameLength))
	}

	scopes := make([]string, 0, len(spec.Scopes))
	for _, s := range spec.Scopes {
		switch {
		case !slices.Contains(bgcheck.Scopes, s):
			bad("scopes", fmt.Sprintf("unknown scope %q (valid: %s)", s, strings.Join(bgcheck.Scopes, ", ")))
		case !slices.Contains(scopes, s):
			scopes = append(scopes, s)
		}
	}

	var expires *time.Time
	if spec.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *spec.ExpiresAt)
		switch {
		case err != nil:
			bad("expires_at", "must be an RFC 3339 time such as 2027-01-01T00:00:00Z")
		case !t.After(now):
			bad("expires_at", "must be in the future")
		default:
			t = t.UTC().Truncate(time.Microsecond) // what PostgreSQL keeps
			expires = &t
		}
	}

	allowed := make([]netip.Prefix, 0, len(spec.AllowedIPs))
	if len(spec.AllowedIPs) > MaxKeyAllowedIPs {
		bad("allowed_ips", fmt.Sprintf("must list at most %d addresses or prefixes", MaxKeyAllowedIPs))
	} else {
		for _, a := range spec.AllowedIPs {
			p, err := netguard.ParsePrefix(strings.TrimSpace(a))
			switch {
			case err != nil:
				bad("allowed_ips", err.Error())
			case !slices.Contains(allowed, p):
				allowed = append(allowed, p)
			}
		}
	}

	if fields != nil {
		return IssuedKey{}, bgcheck.ValidationError(fields...)
	}
	return IssuedKey{
		GeneratedKey: NewAPIKey(spec.Mode),
		Name:         spec.Name, Mode: spec.Mode, Scopes: scopes, AllowedIPs: allowed, ExpiresAt: expires,
	}, nil
}

// Record is what storage keeps of the key for an account ("" for the CLI's bootstrap, which fills
// it in): the hash and the rules, never the key. It is the one way the admin API and the operator
// CLI turn an issued key into a row.
func (k IssuedKey) Record(accountID string) bgcheck.NewAPIKey {
	return bgcheck.NewAPIKey{
		AccountID: accountID, Name: k.Name, Mode: k.Mode, Hash: k.Hash, Prefix: k.Prefix, Last4: k.Last4,
		Scopes: k.Scopes, AllowedIPs: k.AllowedIPs, ExpiresAt: k.ExpiresAt,
	}
}
