package api

import (
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/ratelimit"
)

// The headers of API.md §7, canonicalized once here rather than by every Header.Set.
var (
	headerRateLimit     = http.CanonicalHeaderKey("X-RateLimit-Limit")     // the window's budget
	headerRateRemaining = http.CanonicalHeaderKey("X-RateLimit-Remaining") // what is left of it
	headerRateReset     = http.CanonicalHeaderKey("X-RateLimit-Reset")     // Unix seconds when the window ends
	headerRetryAfter    = "Retry-After"
)

// bucket names whose budget a request spends: an API key, a user, or a client address.
type bucket struct {
	kind bucketKind
	id   string     // the key's or the user's id
	addr netip.Addr // the client address, for byAddress
}

type bucketKind uint8

const (
	byAddress bucketKind = iota
	byAPIKey
	byUser
)

// key is the bucket's key in the limiter's store: "key:<id>", "user:<id>", or "ip:<address>". An
// IPv6 client is counted by its /64, the block one subscriber gets: otherwise it could spend a
// fresh budget from each of its 2^64 addresses.
func (b bucket) key() string {
	switch b.kind {
	case byAPIKey:
		return "key:" + b.id
	case byUser:
		return "user:" + b.id
	}
	if b.addr.Is6() {
		if p, err := b.addr.Prefix(64); err == nil {
			return "ip:" + p.String()
		}
	}
	return "ip:" + b.addr.String()
}

// whose says whose budget it is, for the 429's detail.
func (b bucket) whose() string {
	switch b.kind {
	case byAPIKey:
		return "this API key"
	case byUser:
		return "this user"
	}
	return "your address"
}

// takeRate counts r against class c's budget for b and sets the X-RateLimit-* headers, before
// anything is written, so every answer of the route carries them. When the window's budget is
// spent it answers 429 rate_limited with Retry-After and returns false. Without limits for the
// class (Options.RateLimits nil, or the class off) it does nothing and returns true.
func (s *Server) takeRate(w http.ResponseWriter, r *http.Request, c ratelimit.Class, b bucket) bool {
	rule := s.opts.RateLimits.Rule(c)
	if rule.Off() {
		return true
	}
	d, counted := s.opts.RateLimits.Take(r.Context(), c, b.key())
	if !counted {
		return true
	}
	h := w.Header()
	h.Set(headerRateLimit, strconv.FormatUint(d.Limit, 10))
	h.Set(headerRateRemaining, strconv.FormatUint(d.Remaining, 10))
	h.Set(headerRateReset, strconv.FormatInt(ceilSeconds(d.Reset.UnixNano()), 10))
	if d.Allowed {
		return true
	}
	// Whole seconds, rounded up so that a client that waits this long finds the window over;
	// now + Retry-After and X-RateLimit-Reset are both within a second after the window's end.
	retry := max(1, ceilSeconds(int64(time.Until(d.Reset))))
	h.Set(headerRetryAfter, strconv.FormatInt(retry, 10))
	s.metrics.RateLimited(c.String())
	writeError(w, r, bgcheck.Errorf(bgcheck.CodeRateLimited, "too many requests: the limit is %d per %s for %s; retry in %d s",
		d.Limit, ratelimit.FormatWindow(rule.Window), b.whose(), retry))
	return false
}

// ceilSeconds is ns nanoseconds in whole seconds, rounded up.
func ceilSeconds(ns int64) int64 {
	s := ns / int64(time.Second)
	if ns%int64(time.Second) > 0 {
		s++
	}
	return s
}

// limitByAddress counts every request of the routes it wraps against class c, per client
// address: the sign-in routes, where there is no credential yet to count by.
func (s *Server) limitByAddress(c ratelimit.Class) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.takeRate(w, r, c, bucket{kind: byAddress, addr: clientAddr(r.Context())}) {
				next.ServeHTTP(w, r)
			}
		})
	}
}
