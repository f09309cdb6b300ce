package metrics_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/metrics"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// A database that does not answer costs the scrape the outbox gauge, not the whole page.
func TestUndispatchedFailureLeavesTheRestOfThePage(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.NewAPI(reg)
	m.RateLimited("platform")
	reg.MustRegister(metrics.NewUndispatched(func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}, 10*time.Millisecond))
	var logs bytes.Buffer
	page := scrape(t, metrics.Handler(reg, slog.New(slog.NewTextHandler(&logs, nil))))
	if strings.Contains(page, "bgcheck_deliveries_undispatched ") {
		t.Errorf("a failed count is reported:\n%s", page)
	}
	for _, want := range []string{`bgcheck_rate_limit_refusals_total{class="platform"} 1`, "go_goroutines ", "process_"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if !strings.Contains(logs.String(), "deadline exceeded") {
		t.Errorf("the failure is not logged: %q", logs.String())
	}

	ok := metrics.NewRegistry()
	ok.MustRegister(metrics.NewUndispatched(func(context.Context) (int, error) { return 7, nil }, time.Second))
	if page := scrape(t, metrics.Handler(ok, nil)); !strings.Contains(page, "bgcheck_deliveries_undispatched 7\n") {
		t.Errorf("the count is not the gauge:\n%s", page)
	}
}

// Code that counts runs unchanged without metrics.
func TestNilMetricsCountNothing(t *testing.T) {
	var a *metrics.API
	a.Request("/x", "GET", 200, time.Second)
	a.RateLimited("auth")
	a.EventAccepted("check.completed", 3)
	var d *metrics.Dispatcher
	d.WorkflowStarts(1, 1)
	var w *metrics.Worker
	w.Attempt(metrics.OutcomeSucceeded, time.Second)
	w.Canceled()
}

// Methods a client makes up do not become label values.
func TestUnknownMethodsAreFolded(t *testing.T) {
	reg := metrics.NewRegistry()
	m := metrics.NewAPI(reg)
	m.Request("", "BREW", 405, time.Millisecond)
	page := scrape(t, metrics.Handler(reg, nil))
	if !strings.Contains(page, `bgcheck_http_requests_total{method="other",route="unmatched",status="405"} 1`) || strings.Contains(page, "BREW") {
		t.Errorf("page:\n%s", page)
	}
}
