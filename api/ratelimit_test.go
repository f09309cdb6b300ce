package api_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
	"github.com/bgcheck/bgcheck/ratelimit/redistest"
)

// The tests in this file hold the HTTP side of API.md §7 to real requests: which budget a request
// spends, the X-RateLimit-* headers on every answer, 429 with Retry-After, and counters in memory
// and in Redis.

// newLimiter returns a limiter of limits counting in store ("memory" or "redis"; in Redis under a
// key prefix of the test's own).
func newLimiter(t *testing.T, limits ratelimit.Limits, store string, log *slog.Logger) *limiter.Limiter {
	t.Helper()
	o := limiter.Options{Logger: log}
	if store == "redis" {
		o.RedisURL = redistest.URL(t)
		o.RedisTimeout = exactCountRedisTimeout
		o.Prefix = redistest.Prefix(t, o.RedisURL)
	}
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

// eachStore runs a test with the counters in memory and in Redis.
func eachStore(t *testing.T, test func(t *testing.T, store string)) {
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) { test(t, store) })
	}
}

// rateHeaders are the X-RateLimit-* headers of an answer, and Retry-After (0 when absent).
type rateHeaders struct {
	limit, remaining, reset, retryAfter int64
}

func rateOf(t *testing.T, r *response) rateHeaders {
	t.Helper()
	num := func(name string) int64 {
		v := r.Header.Get(name)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("status %d: %s is %q, want a whole number; body %s", r.Status, name, v, r.Body)
		}
		return n
	}
	h := rateHeaders{limit: num("X-RateLimit-Limit"), remaining: num("X-RateLimit-Remaining"), reset: num("X-RateLimit-Reset")}
	if r.Status == http.StatusTooManyRequests {
		h.retryAfter = num("Retry-After")
	} else if v := r.Header.Get("Retry-After"); v != "" {
		t.Fatalf("status %d has Retry-After %q", r.Status, v)
	}
	return h
}

// budget follows one bucket through a sequence of answers: the limit stays, Remaining counts down
// by one per request until 0, and Reset stays at one time in the window ahead.
type budget struct {
	t      *testing.T
	name   string
	rule   ratelimit.Rule
	spent  int64
	reset  int64
	resets int
}

// spend asserts that r is an answer of status from this bucket, with consistent headers.
func (b *budget) spend(r *response, status int) {
	b.t.Helper()
	if r.Status != status {
		b.t.Fatalf("%s: status %d, want %d; body %s", b.name, r.Status, status, r.Body)
	}
	h := rateOf(b.t, r)
	limit := int64(b.rule.Limit)
	b.spent = min(b.spent+1, limit)
	now := time.Now()
	if h.limit != limit || h.remaining != limit-b.spent {
		b.t.Fatalf("%s, answer %d: limit %d, remaining %d; want %d, %d", b.name, r.Status, h.limit, h.remaining, limit, limit-b.spent)
	}
	if b.reset == 0 {
		b.reset = h.reset
	}
	if h.reset != b.reset || h.reset < now.Unix() || h.reset > now.Add(b.rule.Window).Unix()+1 {
		b.t.Fatalf("%s: reset %d (first %d); now %d, window %s", b.name, h.reset, b.reset, now.Unix(), b.rule.Window)
	}
	if r.Status == http.StatusTooManyRequests {
		if h.remaining != 0 || h.retryAfter < 1 || h.retryAfter > int64(b.rule.Window/time.Second) {
			b.t.Fatalf("%s: 429 with remaining %d, Retry-After %d", b.name, h.remaining, h.retryAfter)
		}
		// Waiting Retry-After seconds ends in the same second as X-RateLimit-Reset, give or take
		// the rounding of each.
		if d := now.Unix() + h.retryAfter - h.reset; d < -1 || d > 1 {
			b.t.Fatalf("%s: now %d + Retry-After %d is %ds off Reset %d", b.name, now.Unix(), h.retryAfter, d, h.reset)
		}
		p := wantProblem(b.t, r, http.StatusTooManyRequests, bgcheck.CodeRateLimited)
		if !strings.Contains(p.Detail, "retry in "+strconv.FormatInt(h.retryAfter, 10)+" s") {
			b.t.Fatalf("%s: detail %q does not give the wait", b.name, p.Detail)
		}
	}
}

// noRateHeaders asserts that an answer carries no X-RateLimit-* header.
func noRateHeaders(t *testing.T, r *response) {
	t.Helper()
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Ratelimit-") || name == "Retry-After" {
			t.Fatalf("status %d carries %s", r.Status, name)
		}
	}
}

// Every answer of an API-key route carries the headers of the budget it spent: the key's once the
// key is verified, the client address's otherwise; a spent budget is 429 even for a bad key.
func TestPlatformHeadersOnEveryAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, store string) {
		rule := ratelimit.Rule{Limit: 6, Window: time.Minute}
		e := newEnv(t, api.Options{RateLimits: newLimiter(t, ratelimit.Limits{Platform: rule}, store, nil)})
		a := e.newAccount()
		const list = "/api/v1/webhooks/endpoints"

		key := &budget{t: t, name: "key", rule: rule}
		key.spend(e.do("GET", list, a.TestKey, nil), 200)
		key.spend(e.do("GET", list+"/we_malformed", a.TestKey, nil), 404)
		key.spend(e.do("GET", list+"?limit=0", a.TestKey, nil), 422)
		key.spend(e.do("POST", list, a.TestKey, `{"url":"`+strings.Repeat("x", 2<<20)+`"}`), 413)
		key.spend(e.do("POST", list, a.TestKey, "{"), 400)
		key.spend(e.do("GET", list, a.TestKey, nil), 200)
		key.spend(e.do("GET", list, a.TestKey, nil), 429)
		key.spend(e.do("GET", list+"/we_malformed", a.TestKey, nil), 429)

		// Another key has its own budget, also for a 403.
		readOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeCandidatesRead}})
		scoped := &budget{t: t, name: "scoped key", rule: rule}
		scoped.spend(e.do("GET", list, readOnly, nil), 403)

		// Without a valid key, the client address pays: missing, unknown or fenced-off keys alike.
		fenced, _ := e.newKey(a.ID, keyOpts{allowed: []string{"203.0.113.0/24"}})
		addr := &budget{t: t, name: "address", rule: rule}
		addr.spend(e.do("GET", list, "", nil), 401)
		addr.spend(e.do("GET", list, "svc_test_"+strings.Repeat("x", 43), nil), 401)
		addr.spend(e.do("GET", list, fenced, nil), 403)
		for range 3 {
			addr.spend(e.do("GET", list, "", nil), 401)
		}
		addr.spend(e.do("GET", list, "", nil), 429)
		addr.spend(e.do("GET", list, "svc_test_guess", nil), 429) // guessing keys is throttled
		// ... while a valid key from the same address still has its own budget.
		other, _ := e.newKey(a.ID, keyOpts{})
		(&budget{t: t, name: "other key", rule: rule}).spend(e.do("GET", list, other, nil), 200)

		noRateHeaders(t, e.do("GET", "/healthz", "", nil))
		noRateHeaders(t, e.do("GET", "/api/v1/openapi.json", "", nil))
	})
}

// Bearer routes count per user once the token is verified, per client address otherwise.
func TestConsumerHeadersOnEveryAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, store string) {
		rule := ratelimit.Rule{Limit: 6, Window: time.Minute}
		tokens, err := auth.NewTokens(signingKey)
		if err != nil {
			t.Fatal(err)
		}
		// The auth class is off, so signing in is free here.
		e := newEnv(t, api.Options{Tokens: tokens, RateLimits: newLimiter(t, ratelimit.Limits{Consumer: rule}, store, nil)})
		a := e.newAccount()
		e.user(a.ID, "admin@example.com", bgcheck.RoleAdmin, "correct horse battery")
		e.user("", "jane@example.com", bgcheck.RoleConsumer, "correct horse battery")
		admin := e.login("admin@example.com", "correct horse battery").AccessToken
		consumer := e.login("jane@example.com", "correct horse battery").AccessToken

		user := &budget{t: t, name: "admin", rule: rule}
		user.spend(e.bearer("GET", "/api/v1/me", admin, nil), 200)
		user.spend(e.bearer("GET", "/api/v1/admin/deliveries?status=bogus", admin, nil), 422)
		user.spend(e.bearer("DELETE", "/api/v1/admin/api-keys/key_malformed", admin, nil), 404)
		user.spend(e.bearer("GET", "/api/v1/admin/overview", admin, nil), 200)
		user.spend(e.bearer("POST", "/api/v1/admin/api-keys", admin, `{"mode":"neither"}`), 422)
		user.spend(e.bearer("GET", "/api/v1/me", admin, nil), 200)
		user.spend(e.bearer("GET", "/api/v1/me", admin, nil), 429)
		user.spend(e.bearer("GET", "/api/v1/admin/overview", admin, nil), 429)

		other := &budget{t: t, name: "consumer", rule: rule}
		other.spend(e.bearer("GET", "/api/v1/admin/overview", consumer, nil), 403)
		other.spend(e.bearer("POST", "/api/v1/auth/logout", consumer, nil), 204) // logout is a bearer route

		addr := &budget{t: t, name: "address", rule: rule}
		addr.spend(e.bearer("GET", "/api/v1/me", "", nil), 401)
		addr.spend(e.bearer("GET", "/api/v1/me", "not.a.jwt", nil), 401)
		addr.spend(e.bearer("GET", "/api/v1/me", consumer, nil), 401) // its sign-in has ended
		for range 3 {
			addr.spend(e.bearer("GET", "/api/v1/admin/overview", "", nil), 401)
		}
		addr.spend(e.bearer("GET", "/api/v1/me", "not.a.jwt", nil), 429)

		// The auth class is off: no headers on sign-in.
		noRateHeaders(t, e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "x"}))
	})
}

// The sign-in routes count per client address, whatever the answer.
func TestAuthHeadersOnEveryAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, store string) {
		rule := ratelimit.Rule{Limit: 7, Window: time.Minute}
		tokens, err := auth.NewTokens(signingKey)
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, api.Options{Tokens: tokens, Mailer: &mailbox{links: map[string][]string{}},
			RateLimits: newLimiter(t, ratelimit.Limits{Auth: rule}, store, nil)})
		addr := &budget{t: t, name: "address", rule: rule}
		registered := e.do("POST", "/api/v1/auth/register", "", map[string]any{"email": "dana@example.com", "password": "correct horse battery"})
		addr.spend(registered, 201)
		pair := decode[pairJSON](t, registered, 201)
		addr.spend(e.do("POST", "/api/v1/auth/register", "", map[string]any{"email": "not an address", "password": "correct horse battery"}), 422)
		addr.spend(e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "dana@example.com", "password": "wrong password"}), 401)
		addr.spend(e.do("POST", "/api/v1/auth/refresh", "", map[string]any{"refresh_token": pair.RefreshToken}), 200)
		addr.spend(e.do("POST", "/api/v1/auth/magic-link/verify", "", "{"), 400)
		addr.spend(e.do("POST", "/api/v1/auth/magic-link/request", "", map[string]any{"email": "dana@example.com"}), 202)
		addr.spend(e.do("GET", "/api/v1/auth/login", "", nil), 405) // a wrong method costs the same
		addr.spend(e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "dana@example.com", "password": "correct horse battery"}), 429)
		// Bearer routes are not the auth class: logout and /me are unaffected (and here unlimited).
		r := e.bearer("GET", "/api/v1/me", pair.AccessToken, nil)
		if r.Status != 200 {
			t.Fatalf("/me after the auth budget is spent: %d %s", r.Status, r.Body)
		}
		noRateHeaders(t, r)
	})
}

// concurrentGETs sends n GET requests at once, spread over the servers, each on its own
// connection, and returns the answers' statuses and X-RateLimit-Remaining values.
func concurrentGETs(t *testing.T, urls []string, key string, n int) (statuses map[int]int, remaining []int64) {
	t.Helper()
	statuses = map[int]int{}
	var mu sync.Mutex
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			req, _ := http.NewRequest("GET", urls[i%len(urls)]+"/api/v1/webhooks/endpoints", nil)
			req.Header.Set("X-API-Key", key)
			start.Wait()
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			rem, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Remaining"), 10, 64)
			if err != nil {
				t.Errorf("status %d without X-RateLimit-Remaining", resp.StatusCode)
			}
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusOK {
				remaining = append(remaining, rem)
			}
		})
	}
	start.Done()
	wg.Wait()
	return statuses, remaining
}

// checkExactly asserts that exactly limit of n requests passed, each seeing a different
// remaining count, and the rest were refused.
func checkExactly(t *testing.T, statuses map[int]int, remaining []int64, limit, n int) {
	t.Helper()
	if statuses[200] != limit || statuses[429] != n-limit {
		t.Fatalf("statuses %v for %d requests, want exactly %d × 200 and %d × 429", statuses, n, limit, n-limit)
	}
	slices.Sort(remaining)
	for i, r := range remaining {
		if r != int64(i) {
			t.Fatalf("the passing requests saw remaining %v, want each of 0..%d once", remaining, limit-1)
		}
	}
}

// 200 clients at once against one key of the default platform limit (120 per minute): exactly
// 120 pass.
func TestExactlyTheLimitOfConcurrentRequestsPass(t *testing.T) {
	eachStore(t, func(t *testing.T, store string) {
		limits := ratelimit.DefaultLimits()
		e := newEnv(t, api.Options{RateLimits: newLimiter(t, limits, store, nil)})
		statuses, remaining := concurrentGETs(t, []string{e.srv.URL}, e.newAccount().TestKey, 200)
		checkExactly(t, statuses, remaining, int(limits.Platform.Limit), 200)
	})
}

// Two API instances counting in one Redis allow the limit between them, not each.
func TestInstancesSharingRedisAllowTheLimitTogether(t *testing.T) {
	u := redistest.URL(t)
	o := limiter.Options{RedisURL: u, Prefix: redistest.Prefix(t, u), Logger: slog.New(slog.DiscardHandler),
		RedisTimeout: exactCountRedisTimeout}
	rule := ratelimit.Rule{Limit: 50, Window: time.Minute}
	instance := func() *limiter.Limiter {
		l, err := limiter.New(ratelimit.Limits{Platform: rule}, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(context.Background()) })
		return l
	}
	a := newEnv(t, api.Options{RateLimits: instance()})
	b := newEnvOn(t, a.db, api.Options{RateLimits: instance()})
	statuses, remaining := concurrentGETs(t, []string{a.srv.URL, b.srv.URL}, a.newAccount().TestKey, 200)
	checkExactly(t, statuses, remaining, 50, 200)
}

// After waiting Retry-After seconds, the next request passes.
func TestRetryAfterIsLongEnough(t *testing.T) {
	eachStore(t, func(t *testing.T, store string) {
		t.Parallel()
		rule := ratelimit.Rule{Limit: 2, Window: 2 * time.Second}
		e := newEnv(t, api.Options{RateLimits: newLimiter(t, ratelimit.Limits{Platform: rule}, store, nil)})
		key := e.newAccount().TestKey
		const list = "/api/v1/webhooks/endpoints"
		b := &budget{t: t, name: "key", rule: rule}
		b.spend(e.do("GET", list, key, nil), 200)
		b.spend(e.do("GET", list, key, nil), 200)
		refused := e.do("GET", list, key, nil)
		b.spend(refused, 429)
		time.Sleep(time.Duration(rateOf(t, refused).retryAfter) * time.Second)
		next := &budget{t: t, name: "next window", rule: rule}
		next.spend(e.do("GET", list, key, nil), 200)
		if next.reset <= b.reset {
			t.Fatalf("the next window resets at %d, not after the first's %d", next.reset, b.reset)
		}
	})
}

// A client cannot move its spending to another budget with forwarding headers, unless it is a
// trusted proxy that says whom it forwards for.
func TestForwardedAddressesCountOnlyFromTrustedProxies(t *testing.T) {
	rule := ratelimit.Rule{Limit: 3, Window: time.Minute}
	request := func(e *env, headers map[string]string) *response {
		return e.doWith("POST", "/api/v1/auth/magic-link/request", map[string]any{"email": "nobody@example.com"}, headers)
	}

	// The test's client (127.0.0.1) is not a proxy here: every header is ignored.
	untrusted := newEnv(t, api.Options{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		RateLimits:     newLimiter(t, ratelimit.Limits{Auth: rule}, "memory", nil),
	})
	peer := &budget{t: t, name: "peer", rule: rule}
	peer.spend(request(untrusted, map[string]string{"X-Forwarded-For": "198.51.100.1"}), 202)
	peer.spend(request(untrusted, map[string]string{"X-Forwarded-For": "198.51.100.2, 10.0.0.1"}), 202)
	peer.spend(request(untrusted, map[string]string{"Forwarded": "for=198.51.100.3"}), 202)
	peer.spend(request(untrusted, map[string]string{"X-Forwarded-For": "198.51.100.4", "Forwarded": "for=198.51.100.4"}), 429)

	// Behind a trusted proxy (127.0.0.1 is one here), the forwarded client pays.
	trusted := newEnv(t, api.Options{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		RateLimits:     newLimiter(t, ratelimit.Limits{Auth: rule}, "memory", nil),
	})
	first := &budget{t: t, name: "198.51.100.1", rule: rule}
	for range 3 {
		first.spend(request(trusted, map[string]string{"X-Forwarded-For": "198.51.100.1"}), 202)
	}
	first.spend(request(trusted, map[string]string{"X-Forwarded-For": "203.0.113.9, 198.51.100.1"}), 429)
	(&budget{t: t, name: "198.51.100.2", rule: rule}).spend(request(trusted, map[string]string{"X-Forwarded-For": "198.51.100.1, 198.51.100.2"}), 202)
	// Only the configured header (X-Forwarded-For by default) is read: a Forwarded header the
	// proxy passed through from the client neither chooses the client's address nor, when it
	// disagrees, sends everybody behind the proxy to the proxy's own budget.
	seventh := &budget{t: t, name: "198.51.100.7", rule: rule}
	seventh.spend(request(trusted, map[string]string{"X-Forwarded-For": "198.51.100.7", "Forwarded": "for=198.51.100.8"}), 202)
	seventh.spend(request(trusted, map[string]string{"X-Forwarded-For": "198.51.100.7", "Forwarded": "for=198.51.100.1"}), 202)
	proxy := &budget{t: t, name: "proxy", rule: rule}
	proxy.spend(request(trusted, map[string]string{"Forwarded": `for=198.51.100.1;proto=https`}), 202)

	// Behind a proxy that writes Forwarded (BGCHECK_TRUSTED_PROXY_HEADER=Forwarded), that header
	// is read and X-Forwarded-For is not.
	forwarded := newEnv(t, api.Options{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, ProxyHeader: api.ProxyHeaderForwarded,
		RateLimits: newLimiter(t, ratelimit.Limits{Auth: rule}, "memory", nil),
	})
	v6 := &budget{t: t, name: "2001:db8::/64", rule: rule}
	v6.spend(request(forwarded, map[string]string{"Forwarded": `for="[2001:db8::1]:4711"`}), 202)
	v6.spend(request(forwarded, map[string]string{"Forwarded": `for="[2001:db8::2]"`}), 202) // the same /64
	v6.spend(request(forwarded, map[string]string{"Forwarded": `for="[2001:db8::3]"`, "X-Forwarded-For": "198.51.100.9"}), 202)
	v6.spend(request(forwarded, map[string]string{"Forwarded": `for="[2001:db8::4]"`}), 429)
}

// With Redis unreachable, the API still answers, still limits (on this instance's own counters),
// still sends the headers, and logs the outage once rather than once per request.
func TestUnreachableRedisLimitsPerInstance(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing answers there
	var logs syncBuffer
	rule := ratelimit.Rule{Limit: 3, Window: time.Minute}
	l, err := limiter.New(ratelimit.Limits{Platform: rule}, limiter.Options{
		RedisURL: "redis://" + ln.Addr().String() + "/0", RetryInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	e := newEnv(t, api.Options{RateLimits: l})
	key := e.newAccount().TestKey
	b := &budget{t: t, name: "key", rule: rule}
	for i := range 8 {
		status := 200
		if i >= 3 {
			status = 429
		}
		b.spend(e.do("GET", "/api/v1/webhooks/endpoints", key, nil), status)
		time.Sleep(15 * time.Millisecond) // Redis is tried again after each retry interval
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "Redis is unreachable") {
		t.Fatalf("want one line about the outage, got:\n%s", logs.String())
	}
}

// exactCountRedisTimeout lets the tests that count exactly wait for Redis through heavy load (the
// race detector, other packages' tests on two cores) instead of falling back to memory, which the
// limiter does by design after its default 500 ms and which would split the count.
const exactCountRedisTimeout = 10 * time.Second
