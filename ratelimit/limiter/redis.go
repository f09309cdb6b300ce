package limiter

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	golimiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-redisstore"

	"github.com/bgcheck/bgcheck/ratelimit"
)

// defaultRedisTimeout bounds one Redis round trip (and connecting, and waiting for a pooled
// connection). A take is on every request's path, so a slow or black-holed Redis costs a request
// at most about this much before the limiter falls back to memory.
const (
	defaultRedisTimeout = 500 * time.Millisecond
	// redisMaxConns bounds the connections of one instance; a request waits (up to the timeout)
	// for a free one rather than opening more.
	redisMaxConns = 64
)

// redisBackend is the Redis connection pool every class's store shares, and the state of Redis as
// this instance sees it.
//
// When a take fails (Redis down, unreachable, too slow), the request is counted in this
// instance's memory instead, and so are all requests for the next RetryInterval; then one request
// tries Redis again while the others keep counting in memory. So while Redis is unreachable the
// limits hold per instance (with N instances a client may get up to N times the limit), no
// request fails or waits on Redis more than once per RetryInterval, and every answer still
// carries its X-RateLimit headers. The outage is logged when it starts, at most once per
// LogInterval while it lasts (with how many requests were counted in memory), and when it ends.
type redisBackend struct {
	pool *redis.Pool
	url  string // redacted, for logs
	log  *slog.Logger

	retry       time.Duration
	logInterval time.Duration
	timeout     time.Duration

	down      atomic.Bool
	downUntil atomic.Int64 // Unix ns before which Redis is not tried
	probing   atomic.Bool  // one request is trying Redis after an outage
	onMemory  atomic.Int64 // requests counted in memory since the outage began, or since the last line saying so

	mu      sync.Mutex
	lastLog time.Time
}

func newRedisBackend(o Options) (*redisBackend, error) {
	u, err := url.Parse(o.RedisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("%q is not a Redis URL such as redis://host:6379/0", redact(o.RedisURL))
	}
	rawURL := o.RedisURL
	b := &redisBackend{
		url:         u.Redacted(),
		log:         o.Logger,
		retry:       o.RetryInterval,
		logInterval: o.LogInterval,
		timeout:     o.RedisTimeout,
	}
	if b.timeout <= 0 {
		b.timeout = defaultRedisTimeout
	}
	if b.retry <= 0 {
		b.retry = time.Second
	}
	if b.logInterval <= 0 {
		b.logInterval = 30 * time.Second
	}
	b.pool = &redis.Pool{
		MaxIdle:     redisMaxConns,
		MaxActive:   redisMaxConns,
		Wait:        true,
		IdleTimeout: 4 * time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURLContext(ctx, rawURL,
				redis.DialConnectTimeout(b.timeout),
				redis.DialReadTimeout(b.timeout),
				redis.DialWriteTimeout(b.timeout))
		},
		// A connection idle for a while may have been dropped by Redis or a proxy.
		TestOnBorrow: func(c redis.Conn, idleSince time.Time) error {
			if time.Since(idleSince) < time.Minute {
				return nil
			}
			_, err := c.Do("PING")
			return err
		},
	}
	return b, nil
}

// redact hides a password in a URL that may not even parse.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// store returns a go-redisstore store of rule on the shared pool.
func (b *redisBackend) store(rule ratelimit.Rule) (golimiter.Store, error) {
	return redisstore.NewWithPool(&redisstore.Config{Tokens: rule.Limit, Interval: rule.Window}, b.pool)
}

// checkAtStart pings Redis once, so an unreachable Redis is reported when the API starts rather
// than at the first request.
func (b *redisBackend) checkAtStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*b.timeout)
	defer cancel()
	conn, err := b.pool.GetContext(ctx)
	if err == nil {
		_, err = conn.Do("PING")
		conn.Close()
	}
	if err != nil {
		b.failed(err)
		return
	}
	b.log.Info("rate limits: counting in Redis", "redis", b.url)
}

// try reports whether this request should use Redis: always while it answers; after a failure,
// only once RetryInterval has passed, and then for one request at a time.
func (b *redisBackend) try() bool {
	if !b.down.Load() {
		return true
	}
	if time.Now().UnixNano() >= b.downUntil.Load() && b.probing.CompareAndSwap(false, true) {
		return true
	}
	b.onMemory.Add(1)
	return false
}

// take runs one take on Redis, noting whether Redis answered.
func (b *redisBackend) take(ctx context.Context, s golimiter.Store, key string) (limit, remaining, reset uint64, ok bool, err error) {
	// Bounds the wait for a pooled connection; the round trip itself has the dial timeouts.
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	limit, remaining, reset, ok, err = s.Take(ctx, key)
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) != context.DeadlineExceeded {
			// The request itself was canceled (the client went away): not Redis's fault.
			b.probing.Store(false)
			return
		}
		b.failed(err)
		return
	}
	if b.down.Load() {
		b.recovered()
	}
	return
}

// failed notes a failed round trip: count in memory for the next RetryInterval, and log, at most
// once per LogInterval.
func (b *redisBackend) failed(err error) {
	b.downUntil.Store(time.Now().Add(b.retry).UnixNano())
	wasDown := b.down.Swap(true)
	b.probing.Store(false)
	b.onMemory.Add(1)

	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if wasDown && now.Sub(b.lastLog) < b.logInterval {
		return
	}
	b.lastLog = now
	if !wasDown {
		b.log.Error("rate limits: Redis is unreachable; counting in this instance's memory until it answers (limits hold per instance meanwhile)",
			"redis", b.url, "err", err)
		return
	}
	b.log.Error("rate limits: Redis is still unreachable; counting in this instance's memory",
		"redis", b.url, "err", err, "requests_counted_in_memory", b.onMemory.Swap(0))
}

// recovered notes that Redis answers again.
func (b *redisBackend) recovered() {
	if !b.down.CompareAndSwap(true, false) {
		return
	}
	b.probing.Store(false)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastLog = time.Time{}
	b.log.Info("rate limits: Redis answers again; counting in Redis", "redis", b.url,
		"requests_counted_in_memory", b.onMemory.Swap(0))
}

func (b *redisBackend) close() error { return b.pool.Close() }
