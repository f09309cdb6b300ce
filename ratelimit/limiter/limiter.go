// Package limiter counts requests against the limits of package ratelimit. The counting is
// github.com/sethvargo/go-limiter's: its memorystore in one process, or go-redisstore when several
// API instances share their counters in Redis.
package limiter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	golimiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/bgcheck/bgcheck/ratelimit"
)

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
	// Prefix starts every Redis key; default ratelimit.DefaultPrefix. Tests use their own.
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

// Limiter takes requests from per-class buckets. Its methods are safe for concurrent use.
type Limiter struct {
	classes [3]*classStore
	redis   *redisBackend // nil when the counters are in memory only
}

// classStore holds one class's counters.
type classStore struct {
	rule ratelimit.Rule
	// memory holds the counters without Redis, and is the fallback while Redis is unreachable.
	memory golimiter.Store
	// redis is nil without Redis.
	redis       golimiter.Store
	redisPrefix string
}

// New returns a Limiter for limits: counting in memory, or in Redis when o.RedisURL is set. An
// unreachable Redis is not an error here (the limiter counts in memory until it answers); a
// malformed URL is.
func New(limits ratelimit.Limits, o Options) (*Limiter, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Prefix == "" {
		o.Prefix = ratelimit.DefaultPrefix
	}
	l := &Limiter{}
	if o.RedisURL != "" {
		rb, err := newRedisBackend(o)
		if err != nil {
			return nil, err
		}
		l.redis = rb
	}
	for _, c := range ratelimit.Classes {
		rule := limits.For(c)
		if rule.Off() {
			continue
		}
		if rule.Window < ratelimit.MinWindow {
			l.Close(context.Background())
			return nil, fmt.Errorf("rate limit %s: window %s is shorter than %s", c, rule.Window, ratelimit.MinWindow)
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
func (l *Limiter) Rule(c ratelimit.Class) ratelimit.Rule {
	if l == nil || int(c) >= len(ratelimit.Classes) || l.classes[c] == nil {
		return ratelimit.Rule{}
	}
	return l.classes[c].rule
}

// Take counts one request of class c against the bucket key. ok is false when the class is off
// (or l is nil): nothing was counted and the request goes ahead. When Redis is unreachable the
// request is counted in this process's memory instead, so the limit then holds per instance (see
// redisBackend).
func (l *Limiter) Take(ctx context.Context, c ratelimit.Class, key string) (d Decision, ok bool) {
	if l == nil || int(c) >= len(ratelimit.Classes) || l.classes[c] == nil {
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
