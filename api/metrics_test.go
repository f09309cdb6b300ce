package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/metrics"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
)

// TestMetricsCountRealRequests drives the API the way a client does and reads GET /metrics as
// Prometheus would: requests counted by route pattern and status, a rate-limit refusal by class,
// an event and its delivery, and the delivery waiting in the outbox (no dispatcher runs here, as
// when Temporal is down).
func TestMetricsCountRealRequests(t *testing.T) {
	db := pgtest.NewDB(t)
	reg := prometheus.NewRegistry()
	m := metrics.NewAPI(reg)
	reg.MustRegister(metrics.NewUndispatched(db.CountUndispatched, 2*time.Second))
	limits, err := limiter.New(ratelimit.Limits{Auth: ratelimit.Rule{Limit: 1, Window: time.Hour}}, limiter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { limits.Close(t.Context()) })
	e := newEnvOn(t, db, api.Options{Metrics: m, Gatherer: reg, RateLimits: limits})
	a := e.newAccount()

	scrape := func() string {
		t.Helper()
		r := e.do("GET", "/metrics", "", nil)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: status %d, Content-Type %q: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		return string(r.Body)
	}
	if page := scrape(); !strings.Contains(page, "bgcheck_deliveries_undispatched 0\n") {
		t.Errorf("an empty outbox is not reported as 0:\n%s", grepLines(page, "undispatched"))
	}

	ep := e.createEndpoint(a.TestKey, "https://example.com/hook") // 201
	wantProblem(t, e.do("POST", "/api/v1/webhooks/endpoints", "", map[string]any{"url": "https://example.com/x"}), 401, bgcheck.CodeMissingAPIKey)
	e.do("GET", "/api/v1/webhooks/endpoints/"+ep.ID, a.TestKey, nil) // 200, counted under its pattern
	e.do("GET", "/api/v1/no-such-thing", a.TestKey, nil)             // 404, no route
	// One sign-in attempt an hour: the second is refused.
	for range 2 {
		e.do("POST", "/api/v1/auth/login", "", map[string]any{"email": "x@example.com", "password": "not the one"})
	}
	decode[map[string]any](t, e.do("POST", "/api/v1/events/test", a.TestKey, map[string]any{"type": "check.completed"}), http.StatusCreated)

	page := scrape()
	for _, want := range []string{
		`bgcheck_http_requests_total{method="POST",route="/api/v1/webhooks/endpoints",status="201"} 1` + "\n",
		`bgcheck_http_requests_total{method="POST",route="/api/v1/webhooks/endpoints",status="401"} 1` + "\n",
		`bgcheck_http_requests_total{method="GET",route="/api/v1/webhooks/endpoints/{endpointID}",status="200"} 1` + "\n",
		`bgcheck_http_requests_total{method="GET",route="/metrics",status="200"} 1` + "\n",
		`bgcheck_http_requests_total{method="POST",route="/api/v1/auth/login",status="429"} 1` + "\n",
		`bgcheck_http_request_duration_seconds_count{method="POST",route="/api/v1/webhooks/endpoints"} 2` + "\n",
		`bgcheck_rate_limit_refusals_total{class="auth"} 1` + "\n",
		`bgcheck_events_accepted_total{type="check.completed"} 1` + "\n",
		`bgcheck_deliveries_created_total 1` + "\n",
		`bgcheck_deliveries_undispatched 1` + "\n",
		"# HELP bgcheck_http_requests_total ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(page, ep.ID) {
		t.Error("a raw path (with an endpoint id) is a label value: series would grow with every id")
	}
	if !strings.Contains(page, `bgcheck_http_requests_total{method="GET",route="/api/v1/*",status="404"} 1`+"\n") {
		t.Errorf("the unrouted request is not counted:\n%s", grepLines(page, "404"))
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", grepLines(page, "bgcheck_"))
	}
}

// grepLines returns page's lines that contain s.
func grepLines(page, s string) string {
	var out []string
	for line := range strings.Lines(page) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
