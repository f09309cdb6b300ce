package apiserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/redistest"
)

// The production wiring limits requests as the configuration says: counting in Redis under the
// configured prefix, or, with Redis unreachable, in the instance's memory, which the log says.
func TestServeLimitsRequests(t *testing.T) {
	u := redistest.URL(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // nothing answers there: neither Temporal nor, below, Redis

	for _, c := range []struct {
		name, redisURL, log string
	}{
		{"redis", u, "counting in Redis"},
		{"redis unreachable", "redis://" + closed.Addr().String() + "/0", "Redis is unreachable"},
		{"memory", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := redistest.Prefix(t, u)
			cfg := config.Config{
				DatabaseURL: pgtest.NewURL(t), TemporalAddress: closed.Addr().String(), TemporalNamespace: "default",
				RedisURL: c.redisURL, RedisPrefix: prefix,
				RateLimits: ratelimit.Limits{Auth: ratelimit.Rule{Limit: 2, Window: time.Minute}},
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var logs lockedBuffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- apiserver.Serve(ctx, ln, cfg, slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil)))
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()

			login := "http://" + ln.Addr().String() + "/api/v1/auth/login"
			for i, want := range []int{401, 401, 429} {
				resp, err := http.Post(login, "application/json", strings.NewReader(`{"email":"nobody@example.com","password":"wrong password"}`))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				remaining := resp.Header.Get("X-RateLimit-Remaining")
				if resp.StatusCode != want || resp.Header.Get("X-RateLimit-Limit") != "2" || remaining != []string{"1", "0", "0"}[i] {
					t.Fatalf("login %d: status %d, limit %q, remaining %q", i+1, resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), remaining)
				}
			}
			if c.log != "" && !strings.Contains(logs.String(), c.log) {
				t.Errorf("the log does not say %q:\n%s", c.log, logs.String())
			}
			keys := redistest.Keys(t, u, prefix)
			if wantKeys := c.redisURL == u; (len(keys) == 1) != wantKeys {
				t.Errorf("Redis keys under %s: %q", prefix, keys)
			}
		})
	}
}
