// Package ratelimit counts requests against the limits of API.md §7: three classes (auth,
// consumer, platform), each a number of requests per fixed window and bucket key. The counting is
// github.com/sethvargo/go-limiter's: its memorystore in one process, or go-redisstore when several
// API instances share their counters in Redis. The HTTP side (which key, which headers, the 429)
// is the api package's.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
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

func (l Limits) rule(c Class) Rule {
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

// Decision is the outcome of one request's take from its bucket.
type Decision struct {
	// Allowed is false when the window's budget was already spent: refuse the request.
	Allowed bool
	// Limit is the window's budget and Remaining what is left of it after this request.
	Limit, Remaining uint64
	// Reset is when the window ends and the budget is whole again.
	Reset time.Time
}

// Options configure a Limiter.
type Options struct {
	// RedisURL (redis://[user:password@]host:port/db, or rediss:// for TLS) keeps the counters in
	// Redis, shared by every instance that uses it; empty keeps them in this process.
	RedisURL string
	// Prefix starts every Redis key; default DefaultPrefix. Tests use their own.
	Prefix string
	// RetryInterval is how long the limiter counts in memory after Redis failed before it tries
	// Redis again; default one second.
	RetryInterval time.Duration
	// LogInterval is the least time between two log lines about Redis being unreachable;
	// default 30 seconds.
	LogInterval time.Duration
	// RedisTimeout bounds connecting to Redis, one round trip, and the wait for a pooled
	// connection; default 500 ms, the most a slow Redis adds to a request before the limiter
	// counts in memory. Tests that count exactly under heavy concurrency raise it.
	RedisTimeout time.Duration
	Logger       *slog.Logger
}

// DefaultPrefix starts the Redis keys of the counters: bgcheck:rl:<class>:<rule>:<bucket key>.
const DefaultPrefix = "bgcheck:rl:"

// Limiter takes requests from per-class buckets. Its methods are safe for concurrent use.
type Limiter struct {
	classes [numClasses]*classStore
	redis   *redisBackend // nil when the counters are in memory only
}

// classStore holds one class's counters.
type classStore struct {
	rule Rule
	// memory holds the counters without Redis, and is the fallback while Redis is unreachable.
	memory limiter.Store
	// redis is nil without Redis.
	redis       limiter.Store
	redisPrefix string
}

// New returns a Limiter for limits: counting in memory, or in Redis when o.RedisURL is set. An
// unreachable Redis is not an error here (the limiter counts in memory until it answers); a
// malformed URL is.
func New(limits Limits, o Options) (*Limiter, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	l := &Limiter{}
	if o.RedisURL != "" {
		rb, err := newRedisBackend(o)
		if err != nil {
			return nil, err
		}
		l.redis = rb
	}
	for c := range numClasses {
		rule := limits.rule(c)
		if rule.Off() {
			continue
		}
		if rule.Window < MinWindow {
			l.Close(context.Background())
			return nil, fmt.Errorf("rate limit %s: window %s is shorter than %s", c, rule.Window, MinWindow)
		}
		mem, err := memorystore.New(&memorystore.Config{
			Tokens:   rule.Limit,
			Interval: rule.Window,
			// A bucket whose window has ended holds nothing a new bucket would not, so sweep
			// them once a window has passed: keeps memory bounded under many client addresses.
			SweepInterval: max(rule.Window, time.Minute),
			SweepMinTTL:   rule.Window,
		})
		if err != nil {
			l.Close(context.Background())
			return nil, err
		}
		cs := &classStore{rule: rule, memory: mem}
		if l.redis != nil {
			// The rule is part of the key: go-redisstore keeps a key's limit and window for as
			// long as the key lives, so a changed rule starts new counters instead of being
			// ignored by busy keys.
			cs.redisPrefix = o.Prefix + c.String() + ":" + rule.String() + ":"
			if cs.redis, err = l.redis.store(rule); err != nil {
				l.Close(context.Background())
				return nil, err
			}
		}
		l.classes[c] = cs
	}
	if l.redis != nil {
		l.redis.checkAtStart()
	}
	return l, nil
}

// Rule returns the rule of class c (the zero Rule when c is off or l is nil).
func (l *Limiter) Rule(c Class) Rule {
	if l == nil || c >= numClasses || l.classes[c] == nil {
		return Rule{}
	}
	return l.classes[c].rule
}

// Take counts one request of class c against the bucket key. ok is false when the class is off
// (or l is nil): nothing was counted and the request goes ahead. When Redis is unreachable the
// request is counted in this process's memory instead, so the limit then holds per instance (see
// redisBackend).
func (l *Limiter) Take(ctx context.Context, c Class, key string) (d Decision, ok bool) {
	if l == nil || c >= numClasses || l.classes[c] == nil {
		return Decision{}, false
	}
	cs := l.classes[c]
	if cs.redis != nil && l.redis.try() {
		limit, remaining, reset, allowed, err := l.redis.take(ctx, cs.redis, cs.redisPrefix+key)
		if err == nil {
			return decision(limit, remaining, reset, allowed), true
		}
	}
	limit, remaining, reset, allowed, err := cs.memory.Take(ctx, key)
	if err != nil {
		// Only a closed store fails (during shutdown): let the request through uncounted.
		return Decision{}, false
	}
	return decision(limit, remaining, reset, allowed), true
}

func decision(limit, remaining, reset uint64, allowed bool) Decision {
	return Decision{Allowed: allowed, Limit: limit, Remaining: remaining, Reset: time.Unix(0, int64(reset))}
}

// Close stops the memory stores' sweepers and closes the Redis connections. Takes after Close
// are not counted.
func (l *Limiter) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, cs := range l.classes {
		if cs == nil {
			continue
		}
		errs = append(errs, cs.memory.Close(ctx))
		if cs.redis != nil {
			errs = append(errs, cs.redis.Close(ctx))
		}
	}
	if l.redis != nil {
		errs = append(errs, l.redis.close())
	}
	return errors.Join(errs...)
}
