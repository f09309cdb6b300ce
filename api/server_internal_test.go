package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
	"github.com/bgcheck/bgcheck/ratelimit/redistest"
)

// newInternalServer returns a Server on a fresh database with one full-access test key.
func newInternalServer(t testing.TB, log *slog.Logger) (*Server, string) {
	t.Helper()
	db := pgtest.NewDB(t)
	g := auth.NewAPIKey(bgcheck.ModeTest)
	_, _, err := db.Bootstrap(context.Background(), "Acme",
		postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin},
		[]bgcheck.NewAPIKey{{Mode: bgcheck.ModeTest, Hash: g.Hash, Prefix: g.Prefix, Last4: g.Last4}})
	if err != nil {
		t.Fatal(err)
	}
	return New(db, auth.NewVerifier(db, 0, log), Options{Logger: log}), g.Raw
}

func TestPanicBecomesInternalErrorWithoutLeaking(t *testing.T) {
	var logs bytes.Buffer
	s, key := newInternalServer(t, slog.New(slog.NewJSONHandler(&logs, nil)))
	s.extraKeyRoutes = func(r chi.Router) {
		r.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("secret-internal-detail") })
	}
	req := httptest.NewRequest("GET", "/api/v1/boom", nil)
	req.Header.Set("X-API-Key", key)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)

	if rec.Code != 500 || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if strings.Contains(rec.Body.String(), "secret-internal-detail") || strings.Contains(rec.Body.String(), "goroutine") {
		t.Fatalf("the answer leaks the panic: %s", rec.Body)
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Code != bgcheck.CodeInternal {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	// The log has the detail, tied to the request id the caller was given.
	if !strings.Contains(logs.String(), "secret-internal-detail") || !strings.Contains(logs.String(), p.RequestID) {
		t.Fatalf("the log lacks the panic or the request id %s:\n%s", p.RequestID, logs.String())
	}
}

func TestUnknownRoutesAndMethodsAreProblems(t *testing.T) {
	s, key := newInternalServer(t, slog.New(slog.DiscardHandler))
	h := s.Handler()
	for _, c := range []struct {
		method, path string
		status       int
		code         bgcheck.Code
	}{
		{"GET", "/api/v1/nope", 404, bgcheck.CodeNotFound},
		{"GET", "/", 404, bgcheck.CodeNotFound},
		{"PUT", "/api/v1/webhooks/endpoints", 405, codeMethodNotAllowed},
		{"POST", "/healthz", 405, codeMethodNotAllowed},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		req.Header.Set("X-API-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var p problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != c.status || p.Code != c.code {
			t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	s, _ := newInternalServer(t, slog.New(slog.DiscardHandler))
	for _, path := range []string{"/healthz", "/readyz"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ok"`) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	s.db.Close() // the database goes away
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the database gone: %d", rec.Code)
	}
}

func TestClientAddressHonoursOnlyTrustedProxies(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	byXFF := New(nil, nil, Options{TrustedProxies: proxies})
	byForwarded := New(nil, nil, Options{TrustedProxies: proxies, ProxyHeader: ProxyHeaderForwarded})
	cases := []struct {
		s                    *Server
		peer, xff, fwd, want string
	}{
		{byXFF, "203.0.113.7:5000", "198.51.100.1", "", "203.0.113.7"},                  // untrusted peer: header ignored
		{byXFF, "10.0.0.2:5000", "198.51.100.1", "", "198.51.100.1"},                    // trusted proxy
		{byXFF, "10.0.0.2:5000", "1.1.1.1, 198.51.100.1, 10.0.0.3", "", "198.51.100.1"}, // rightmost untrusted hop
		{byXFF, "10.0.0.2:5000", "", "", "10.0.0.2"},                                    // no header
		{byXFF, "10.0.0.2:5000", "10.0.0.3", "", "10.0.0.3"},                            // only proxies: the leftmost
		{byXFF, "10.0.0.2:5000", "garbage, 198.51.100.1", "", "198.51.100.1"},           // garbage left of the client
		{byXFF, "10.0.0.2:5000", "198.51.100.1, garbage", "", "10.0.0.2"},               // garbage: stop
		{byXFF, "[::ffff:203.0.113.7]:5000", "", "", "203.0.113.7"},                     // mapped peer

		// RFC 7239 Forwarded, by the same rules, when it is the configured header.
		{byForwarded, "203.0.113.7:5000", "", "for=198.51.100.1", "203.0.113.7"},
		{byForwarded, "10.0.0.2:5000", "", "for=198.51.100.1", "198.51.100.1"},
		{byForwarded, "10.0.0.2:5000", "", `for=198.51.100.1;proto=https;by=10.0.0.2`, "198.51.100.1"},
		{byForwarded, "10.0.0.2:5000", "", `For="198.51.100.1:4711"`, "198.51.100.1"},
		{byForwarded, "10.0.0.2:5000", "", `for="[2001:db8:cafe::17]:4711"`, "2001:db8:cafe::17"},
		{byForwarded, "10.0.0.2:5000", "", `for="[2001:db8:cafe::17]"`, "2001:db8:cafe::17"},
		{byForwarded, "[fd00::1]:5000", "", `for=198.51.100.1, for="[fd00::2]"`, "198.51.100.1"},
		{byForwarded, "10.0.0.2:5000", "", "for=1.1.1.1, for=198.51.100.1, for=10.0.0.3", "198.51.100.1"},
		{byForwarded, "10.0.0.2:5000", "", "for=198.51.100.1, for=unknown", "10.0.0.2"},           // unknown hop: stop
		{byForwarded, "10.0.0.2:5000", "", "for=198.51.100.1, for=_hidden", "10.0.0.2"},           // obfuscated hop: stop
		{byForwarded, "10.0.0.2:5000", "", "for=198.51.100.1, proto=https", "10.0.0.2"},           // a hop without for=: stop
		{byForwarded, "10.0.0.2:5000", "", `for="2001:db8::1"`, "10.0.0.2"},                       // IPv6 must be bracketed
		{byForwarded, "10.0.0.2:5000", "", `for="[2001:db8::1"`, "10.0.0.2"},                      // unclosed bracket
		{byForwarded, "10.0.0.2:5000", "", `for="198.51.100.9, for=198.51.100.1`, "198.51.100.1"}, // a stray quote hides nothing

		// Only the configured header is read; the other one may come from the client.
		{byXFF, "10.0.0.2:5000", "198.51.100.1", "for=198.51.100.2", "198.51.100.1"},
		{byXFF, "10.0.0.2:5000", "", "for=198.51.100.2", "10.0.0.2"},
		{byForwarded, "10.0.0.2:5000", "198.51.100.1", "for=198.51.100.2", "198.51.100.2"},
		{byForwarded, "10.0.0.2:5000", "198.51.100.1", "", "10.0.0.2"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if c.fwd != "" {
			r.Header.Set("Forwarded", c.fwd)
		}
		if got := c.s.clientIP(r); got.String() != c.want {
			t.Errorf("peer %s XFF %q Forwarded %q (reading %s): got %s, want %s", c.peer, c.xff, c.fwd, cmp.Or(c.s.opts.ProxyHeader, ProxyHeaderXFF), got, c.want)
		}
	}

	// Headers repeated on several lines are one list, in order.
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.2:5000"
	r.Header.Add("Forwarded", "for=198.51.100.1")
	r.Header.Add("Forwarded", "for=198.51.100.2, for=10.0.0.9")
	if got := byForwarded.clientIP(r); got.String() != "198.51.100.2" {
		t.Errorf("two Forwarded lines: got %s", got)
	}
}

func TestBucketKeys(t *testing.T) {
	for _, c := range []struct {
		b    bucket
		want string
	}{
		{bucket{kind: byAPIKey, id: "key_1"}, "key:key_1"},
		{bucket{kind: byUser, id: "usr_1"}, "user:usr_1"},
		{bucket{addr: netip.MustParseAddr("198.51.100.7")}, "ip:198.51.100.7"},
		{bucket{addr: netip.MustParseAddr("2001:db8:1:2:aaaa::1")}, "ip:2001:db8:1:2::/64"},
		{bucket{addr: netip.MustParseAddr("2001:db8:1:2:bbbb::9")}, "ip:2001:db8:1:2::/64"},
		{bucket{}, "ip:invalid IP"},
	} {
		if got := c.b.key(); got != c.want {
			t.Errorf("%+v: key %q, want %q", c.b, got, c.want)
		}
	}
}

// FuzzDecodeRequests feeds arbitrary bodies to the decoder and validators of every request type:
// whatever arrives, the answer is a *bgcheck.Error with a code of §1, never a panic.
func FuzzDecodeRequests(f *testing.F) {
	for _, seed := range []string{
		`{"url":"https://example.com","events":["*"]}`, `{"url":5}`, `[]`, `null`, ``, `{"url":"\u0000"}`,
		`{"first_name":"a","last_name":"b","dob":"2000-01-01"}`, `{"events":[null]}`, `{"a":` + strings.Repeat("[", 1000),
		`{"url":"http://[::1]:80/"}{}`, `{"dob":"0000-00-00","email":"@"}`,
	} {
		f.Add([]byte(seed))
	}
	s := New(nil, nil, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			var e *bgcheck.Error
			if err != nil && (!errors.As(err, &e) || statusOf[e.Code] == 0 || e.Code == bgcheck.CodeInternal) {
				t.Fatalf("body %q: error %v is not a client error of §1", body, err)
			}
		}
		var ep endpointRequest
		err := decodeJSON(httptest.NewRequest("POST", "/", bytes.NewReader(body)), &ep)
		check(err)
		if err == nil {
			var v validator
			if ep.URL != nil {
				v.check("url", s.checkWebhookURL(*ep.URL))
			}
			if ep.Events != nil {
				v.eventTypes("events", ep.Events)
			}
			check(v.err())
		}
		var cand candidateRequest
		if err := decodeJSON(httptest.NewRequest("POST", "/", bytes.NewReader(body)), &cand); err == nil {
			check(cand.validate(true))
			check(cand.validate(false))
		} else {
			check(err)
		}
	})
}

// BenchmarkAPIKeyRouting measures one authenticated request through the whole middleware chain
// and the router, with the key verified from the cache, up to a handler that answers 204: without
// rate limits, and with the platform limit counted in memory and in Redis (a budget that never
// runs out, so every request is counted and passes).
func BenchmarkAPIKeyRouting(b *testing.B) {
	unlimited := ratelimit.Limits{Platform: ratelimit.Rule{Limit: 1 << 50, Window: time.Hour}}
	b.Run("limits=off", func(b *testing.B) { benchmarkAPIKeyRouting(b, nil, http.StatusNoContent) })
	b.Run("limits=memory", func(b *testing.B) {
		benchmarkAPIKeyRouting(b, benchLimiter(b, unlimited, limiter.Options{}), http.StatusNoContent)
	})
	b.Run("limits=redis", func(b *testing.B) {
		u := redistest.URL(b)
		benchmarkAPIKeyRouting(b, benchLimiter(b, unlimited, limiter.Options{RedisURL: u, Prefix: redistest.Prefix(b, u)}), http.StatusNoContent)
	})
	// A spent budget: the 429 answer, problem body included.
	spent := ratelimit.Limits{Platform: ratelimit.Rule{Limit: 1, Window: time.Hour}}
	b.Run("limits=memory/refused", func(b *testing.B) {
		benchmarkAPIKeyRouting(b, benchLimiter(b, spent, limiter.Options{}), http.StatusTooManyRequests)
	})
}

func benchLimiter(b *testing.B, limits ratelimit.Limits, o limiter.Options) *limiter.Limiter {
	o.Logger = slog.New(slog.DiscardHandler)
	l, err := limiter.New(limits, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func benchmarkAPIKeyRouting(b *testing.B, limits *limiter.Limiter, want int) {
	s, key := newInternalServer(b, slog.New(slog.DiscardHandler))
	s.opts.RateLimits = limits
	s.keys = auth.NewVerifier(s.db, 1<<62, slog.New(slog.DiscardHandler)) // the cache never expires here
	s.extraKeyRoutes = func(r chi.Router) {
		r.With(requireScope(bgcheck.ScopeWebhooksRead)).Get("/bench/{id}", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		})
	}
	h := s.Handler()
	req := httptest.NewRequest("GET", "/api/v1/bench/we_123", nil)
	req.Header.Set("X-API-Key", key)
	req.RemoteAddr = "127.0.0.1:40000"
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, req) // warm the cache (and spend a budget of 1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		w.status = 0
		h.ServeHTTP(w, req)
	}
	if w.status != want {
		b.Fatalf("status %d, want %d", w.status, want)
	}
}

type discardWriter struct {
	h      http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (d *discardWriter) WriteHeader(code int)        { d.status = code }
