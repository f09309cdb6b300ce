// Package ratelimit holds the limits of API.md §7: three classes (auth, consumer, platform), each
// a number of requests per fixed window and bucket key, and how they are written in the
// configuration. It is plain data, so configuration can name limits without pulling in the
// counting, which is package ratelimit/limiter's; the HTTP side (which key, which headers, the
// 429) is the api package's.
package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Class is a family of routes that share one limit (API.md §7).
type Class uint8

// The classes of API.md §7.
const (
	// Auth is the sign-in routes (register, login, refresh, magic links), counted per client
	// address.
	Auth Class = iota
	// Consumer is every bearer route, counted per user (per client address while the token is
	// missing or invalid).
	Consumer
	// Platform is every API-key route, counted per key (per client address while the key is
	// missing or invalid).
	Platform
	numClasses
)

// Classes lists every class, in order.
var Classes = []Class{Auth, Consumer, Platform}

var classNames = [numClasses]string{"auth", "consumer", "platform"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Rule allows Limit requests per Window and bucket key. The zero Rule is off: nothing is counted.
type Rule struct {
	Limit  uint64
	Window time.Duration
}

// MinWindow is the shortest window: Redis keeps counters for whole seconds.
const MinWindow = time.Second

// Off reports whether the rule counts nothing.
func (r Rule) Off() bool { return r.Limit == 0 }

// String is the rule as ParseRule reads it: "120/1m", "10/90s", or "off".
func (r Rule) String() string {
	if r.Off() {
		return "off"
	}
	return strconv.FormatUint(r.Limit, 10) + "/" + FormatWindow(r.Window)
}

// FormatWindow writes a window the short way: "1m" rather than Go's "1m0s".
func FormatWindow(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// ParseRule reads "N/duration" (a positive whole number of requests per a Go duration of at least
// a second: "10/1m", "120/60s", "5000/1h") or "off".
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Rule{}, nil
	}
	n, w, ok := strings.Cut(s, "/")
	limit, err := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
	if !ok || err != nil || limit == 0 {
		return Rule{}, fmt.Errorf("%q is not N/duration (such as 120/1m) or off", s)
	}
	window, err := time.ParseDuration(strings.TrimSpace(w))
	if err != nil || window < MinWindow {
		return Rule{}, fmt.Errorf("%q: the window must be a duration of at least 1s, such as 1m", s)
	}
	return Rule{Limit: limit, Window: window}, nil
}

// Limits are the rules of the three classes.
type Limits struct {
	Auth, Consumer, Platform Rule
}

// DefaultLimits are API.md §7's: auth 10, consumer 60 and platform 120 requests per minute.
func DefaultLimits() Limits {
	return Limits{
		Auth:     Rule{Limit: 10, Window: time.Minute},
		Consumer: Rule{Limit: 60, Window: time.Minute},
		Platform: Rule{Limit: 120, Window: time.Minute},
	}
}

// For returns the rule of class c.
func (l Limits) For(c Class) Rule {
	switch c {
	case Auth:
		return l.Auth
	case Consumer:
		return l.Consumer
	case Platform:
		return l.Platform
	}
	return Rule{}
}

// DefaultPrefix starts the Redis keys of the counters: bgcheck:rl:<class>:<rule>:<bucket key>.
const DefaultPrefix = "bgcheck:rl:"
