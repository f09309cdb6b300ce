package limiter_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
	"github.com/bgcheck/bgcheck/ratelimit/redistest"
)

func TestMalformedRedisURLsAreRefused(t *testing.T) {
	for _, u := range []string{"127.0.0.1:6379", "http://127.0.0.1:6379", "redis://", "redis:///0", "://x"} {
		if l, err := limiter.New(ratelimit.DefaultLimits(), limiter.Options{RedisURL: u}); err == nil {
			l.Close(context.Background())
			t.Errorf("New with Redis URL %q: no error", u)
		}
	}
	// The password never shows in the error.
	_, err := limiter.New(ratelimit.DefaultLimits(), limiter.Options{RedisURL: "http://user:s3cret@host/0"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v", err)
	}
}

func TestOffClassesCountNothing(t *testing.T) {
	l := newLimiter(t, ratelimit.Limits{Platform: ratelimit.Rule{Limit: 1, Window: time.Minute}}, limiter.Options{})
	for range 3 {
		if d, ok := l.Take(context.Background(), ratelimit.Auth, "ip:192.0.2.1"); ok {
			t.Fatalf("auth is off, but Take counted: %+v", d)
		}
	}
	var nilLimiter *limiter.Limiter
	if _, ok := nilLimiter.Take(context.Background(), ratelimit.Platform, "k"); ok {
		t.Fatal("a nil Limiter counted")
	}
	if d, ok := l.Take(context.Background(), ratelimit.Platform, "k"); !ok || !d.Allowed {
		t.Fatalf("platform: %+v %v", d, ok)
	}
	if d, _ := l.Take(context.Background(), ratelimit.Platform, "k"); d.Allowed {
		t.Fatalf("platform allowed a second request of 1/1m: %+v", d)
	}
}

// stores runs a test with counters in memory and in Redis.
func stores(t *testing.T, test func(t *testing.T, o func() limiter.Options)) {
	t.Run("memory", func(t *testing.T) { test(t, func() limiter.Options { return limiter.Options{} }) })
	t.Run("redis", func(t *testing.T) {
		u := redistest.URL(t)
		prefix := redistest.Prefix(t, u)
		test(t, func() limiter.Options {
			return limiter.Options{RedisURL: u, Prefix: prefix, RedisTimeout: 10 * time.Second}
		})
	})
}

func newLimiter(t testing.TB, limits ratelimit.Limits, o limiter.Options) *limiter.Limiter {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	l, err := limiter.New(limits, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// takeConcurrently takes m times from key at once, spread over the limiters, and returns the
// decisions.
func takeConcurrently(t *testing.T, ls []*limiter.Limiter, c ratelimit.Class, key string, m int) []limiter.Decision {
	t.Helper()
	out := make([]limiter.Decision, m)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range m {
		wg.Go(func() {
			start.Wait()
			d, ok := ls[i%len(ls)].Take(context.Background(), c, key)
			if !ok {
				t.Error("Take did not count")
			}
			out[i] = d
		})
	}
	start.Done()
	wg.Wait()
	return out
}

// checkExactly asserts that exactly limit decisions allowed, with the remaining counts limit-1
// down to 0 each given once, and that the refused ones say 0 remaining and share one reset.
func checkExactly(t *testing.T, ds []limiter.Decision, limit uint64, window time.Duration) {
	t.Helper()
	var remaining []uint64
	resets := map[int64]bool{}
	for _, d := range ds {
		if d.Limit != limit {
			t.Errorf("Limit %d, want %d", d.Limit, limit)
		}
		if d.Allowed {
			remaining = append(remaining, d.Remaining)
		} else if d.Remaining != 0 {
			t.Errorf("a refusal says %d remaining", d.Remaining)
		}
		resets[d.Reset.UnixNano()] = true
		if until := time.Until(d.Reset); until <= 0 || until > window {
			t.Errorf("Reset %s is %s away, want within (0, %s]", d.Reset, until, window)
		}
	}
	if uint64(len(remaining)) != limit {
		t.Fatalf("%d of %d allowed, want exactly %d", len(remaining), len(ds), limit)
	}
	slices.Sort(remaining)
	for i, r := range remaining {
		if r != uint64(i) {
			t.Fatalf("remaining counts %v, want each of 0..%d once", remaining, limit-1)
		}
	}
	if len(resets) != 1 {
		t.Errorf("%d different reset times in one window, want 1", len(resets))
	}
}

func TestExactlyTheLimitOfConcurrentRequestsPass(t *testing.T) {
	stores(t, func(t *testing.T, o func() limiter.Options) {
		rule := ratelimit.Rule{Limit: 50, Window: time.Minute}
		l := newLimiter(t, ratelimit.Limits{Platform: rule}, o())
		checkExactly(t, takeConcurrently(t, []*limiter.Limiter{l}, ratelimit.Platform, "key:key_1", 300), 50, time.Minute)
		// Another bucket of the same class has its own budget.
		if d, _ := l.Take(context.Background(), ratelimit.Platform, "key:key_2"); !d.Allowed || d.Remaining != 49 {
			t.Fatalf("another key: %+v", d)
		}
	})
}

func TestInstancesSharingRedisAllowTheLimitTogether(t *testing.T) {
	u := redistest.URL(t)
	o := limiter.Options{RedisURL: u, Prefix: redistest.Prefix(t, u), RedisTimeout: 10 * time.Second}
	rule := ratelimit.Rule{Limit: 40, Window: time.Minute}
	a := newLimiter(t, ratelimit.Limits{Consumer: rule}, o)
	b := newLimiter(t, ratelimit.Limits{Consumer: rule}, o)
	checkExactly(t, takeConcurrently(t, []*limiter.Limiter{a, b}, ratelimit.Consumer, "user:usr_1", 200), 40, time.Minute)

	keys := redistest.Keys(t, u, o.Prefix)
	if want := o.Prefix + "consumer:40/1m:user:usr_1"; len(keys) != 1 || keys[0] != want {
		t.Fatalf("Redis keys %q, want [%s]", keys, want)
	}
	// A changed rule counts afresh rather than inheriting the old key's limit.
	c := newLimiter(t, ratelimit.Limits{Consumer: ratelimit.Rule{Limit: 41, Window: time.Minute}}, o)
	if d, _ := c.Take(context.Background(), ratelimit.Consumer, "user:usr_1"); !d.Allowed || d.Limit != 41 || d.Remaining != 40 {
		t.Fatalf("after the rule changed: %+v", d)
	}
}

func TestTheBudgetIsWholeAgainWhenTheWindowEnds(t *testing.T) {
	stores(t, func(t *testing.T, o func() limiter.Options) {
		rule := ratelimit.Rule{Limit: 2, Window: 2 * time.Second}
		l := newLimiter(t, ratelimit.Limits{Auth: rule}, o())
		ctx := context.Background()
		var last limiter.Decision
		for i := range 3 {
			last, _ = l.Take(ctx, ratelimit.Auth, "ip:192.0.2.7")
			if last.Allowed != (i < 2) {
				t.Fatalf("take %d: %+v", i+1, last)
			}
		}
		time.Sleep(time.Until(last.Reset))
		if d, _ := l.Take(ctx, ratelimit.Auth, "ip:192.0.2.7"); !d.Allowed || d.Remaining != 1 || !d.Reset.After(last.Reset) {
			t.Fatalf("after the reset at %s: %+v", last.Reset, d)
		}
	})
}

// logBuffer is a log that tests count lines in.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	return ln.Addr().String()
}

// With Redis unreachable from the start, the limiter still starts, counts in memory (the limit
// holds on this instance), and says so once rather than once per request.
func TestUnreachableRedisFallsBackToMemory(t *testing.T) {
	var logs logBuffer
	l := newLimiter(t, ratelimit.Limits{Platform: ratelimit.Rule{Limit: 5, Window: time.Minute}}, limiter.Options{
		RedisURL: "redis://" + closedAddr(t) + "/0", RetryInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if n := logs.count("Redis is unreachable"); n != 1 {
		t.Fatalf("%d start-up lines about Redis, want 1:\n%s", n, logs.String())
	}
	allowed := 0
	for i := range 40 {
		d, ok := l.Take(context.Background(), ratelimit.Platform, "key:key_1")
		if !ok || d.Limit != 5 || d.Reset.IsZero() {
			t.Fatalf("take %d: %+v %v", i, d, ok)
		}
		if d.Allowed {
			allowed++
		}
		time.Sleep(5 * time.Millisecond) // past the retry interval now and then: Redis is tried again
	}
	if allowed != 5 {
		t.Fatalf("%d of 40 allowed with Redis down, want the limit of 5", allowed)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Fatalf("%d log lines for 40 requests, want 1 (rate-limited logging):\n%s", n, logs.String())
	}
}

// While the outage lasts, a line at most every LogInterval says so, with the requests counted in
// memory since the last.
func TestLongRedisOutageIsLoggedAtIntervals(t *testing.T) {
	var logs logBuffer
	l := newLimiter(t, ratelimit.Limits{Platform: ratelimit.Rule{Limit: 5, Window: time.Minute}}, limiter.Options{
		RedisURL: "redis://" + closedAddr(t) + "/0", RetryInterval: 5 * time.Millisecond, LogInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	requests := 0
	for start := time.Now(); time.Since(start) < 450*time.Millisecond; requests++ {
		l.Take(context.Background(), ratelimit.Platform, "key:key_1")
		time.Sleep(time.Millisecond)
	}
	still := logs.count("Redis is still unreachable")
	if still < 2 || still > 5 || logs.count("requests_counted_in_memory") != still {
		t.Fatalf("%d requests in 450 ms, %d lines saying Redis is still unreachable, want 2 to 5 with counts:\n%s", requests, still, logs.String())
	}
}

// When Redis goes away mid-run, counting moves to memory; when it is back, to Redis again, where
// the window's count survived the outage. Each change is logged once.
func TestRedisOutageMidway(t *testing.T) {
	u := redistest.URL(t)
	proxy := startProxy(t, u)
	var logs logBuffer
	o := limiter.Options{
		RedisURL: proxy.url, Prefix: redistest.Prefix(t, u), RetryInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(io.MultiWriter(&logs, t.Output()), nil)),
	}
	l := newLimiter(t, ratelimit.Limits{Platform: ratelimit.Rule{Limit: 10, Window: time.Minute}}, o)
	ctx := context.Background()
	take := func() limiter.Decision {
		d, ok := l.Take(ctx, ratelimit.Platform, "key:key_1")
		if !ok {
			t.Fatal("not counted")
		}
		return d
	}
	for i := range 3 {
		if d := take(); !d.Allowed || d.Remaining != uint64(9-i) {
			t.Fatalf("before the outage, take %d: %+v", i+1, d)
		}
	}

	proxy.stop()
	// In memory the bucket is fresh: this instance's own budget of 10.
	for i := range 12 {
		if d := take(); d.Allowed != (i < 10) || d.Limit != 10 {
			t.Fatalf("during the outage, take %d: %+v", i+1, d)
		}
	}
	if n := logs.count("Redis is unreachable"); n != 1 {
		t.Fatalf("%d lines about the outage, want 1:\n%s", n, logs.String())
	}

	proxy.restart()
	time.Sleep(150 * time.Millisecond) // past the retry interval
	// Back in Redis, the window's count went on from 3.
	if d := take(); !d.Allowed || d.Remaining != 6 {
		t.Fatalf("after the outage: %+v", d)
	}
	if n := logs.count(`Redis answers again; counting in Redis","redis":"` + proxy.url + `","requests_counted_in_memory":12}`); n != 1 {
		t.Fatalf("%d lines about the recovery, want 1:\n%s", n, logs.String())
	}
}

// proxy forwards TCP connections to Redis until stopped, so a test can take Redis away.
type proxy struct {
	t      *testing.T
	addr   string
	url    string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func startProxy(t *testing.T, redisURL string) *proxy {
	ru, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, target: ru.Host, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	pu := *ru
	pu.Host = p.addr
	p.url = pu.String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the listener and every connection: Redis is gone.
func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// restart listens again on the same address.
func (p *proxy) restart() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// BenchmarkTake is one take from a bucket with budget to spare: the store's own cost.
func BenchmarkTake(b *testing.B) {
	rule := ratelimit.Rule{Limit: 1 << 40, Window: time.Hour}
	run := func(b *testing.B, o limiter.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		l := newLimiter(b, ratelimit.Limits{Platform: rule}, o)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if d, _ := l.Take(ctx, ratelimit.Platform, "key:key_bench"); !d.Allowed {
				b.Fatal("refused")
			}
		}
	}
	b.Run("memory", func(b *testing.B) { run(b, limiter.Options{}) })
	b.Run("redis", func(b *testing.B) {
		u := redistest.URL(b)
		run(b, limiter.Options{RedisURL: u, Prefix: redistest.Prefix(b, u)})
	})
}
