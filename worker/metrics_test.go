package worker_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal/temporaltest"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/worker"
)

func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// Attempts made by DeliverWebhook are counted by outcome, and timed, on the worker's page.
func TestDeliveryAttemptsAreCounted(t *testing.T) {
	ctx := context.Background()
	var hits atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first attempt fails, the second succeeds
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	db := pgtest.NewDB(t)
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}
	if _, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{URL: receiver.URL, Events: []string{"*"}, Enabled: true, Secret: webhook.NewSecret()}); err != nil {
		t.Fatal(err)
	}
	ev, err := db.CreateEvent(ctx, tn, webhook.EventCheckCompleted, webhook.SampleData(webhook.EventCheckCompleted))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Deliveries != 1 {
		t.Fatalf("CreateEvent reports %d deliveries, want 1", ev.Deliveries)
	}
	var deliveryID string
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM deliveries WHERE event_id = $1`, ev.ID).Scan(&deliveryID); err != nil {
		t.Fatal(err)
	}

	m := worker.NewMetrics(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = m.Close() })
	acts := &activities.Activities{DB: db, HTTP: activities.NewHTTPClient(true), Log: slog.New(slog.DiscardHandler), Timeout: 5 * time.Second, Metrics: m.Deliveries}
	for _, in := range []activities.AttemptInput{
		{DeliveryID: deliveryID, Number: 1, RetryAfter: time.Minute}, // 503: failed_attempt
		{DeliveryID: deliveryID, Number: 2, Final: true},             // 204: succeeded
		{DeliveryID: "dlv_gone", Number: 1},                          // no such delivery: canceled
	} {
		if _, err := acts.DeliverWebhook(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	page := scrape(t, m.Handler())
	for _, want := range []string{
		`bgcheck_delivery_attempts_total{outcome="failed_attempt"} 1`,
		`bgcheck_delivery_attempts_total{outcome="succeeded"} 1`,
		`bgcheck_delivery_attempts_total{outcome="canceled"} 1`,
		`bgcheck_delivery_attempts_total{outcome="failed_final"} 0`,
		`bgcheck_delivery_attempt_duration_seconds_count{outcome="succeeded"} 1`,
		`bgcheck_delivery_attempt_duration_seconds_count{outcome="failed_attempt"} 1`,
		"# HELP bgcheck_delivery_attempts_total ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", page)
	}
}

// sdkCounted matches a temporal_request_total series that has counted: the SDK's metrics reach the
// page (tally hands them over every second).
var sdkCounted = regexp.MustCompile(`(?m)^temporal_request_total\{[^}]*\} [1-9]`)

// Run serves the worker's page on BGCHECK_WORKER_METRICS_ADDR with the Temporal SDK's metrics
// beside bgcheck's, and stops serving when it stops.
func TestRunServesSDKMetrics(t *testing.T) {
	temporal := temporaltest.Start(t, devtemporal.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the worker to take
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := config.Config{
		DatabaseURL: pgtest.NewURL(t), TemporalAddress: temporal.Address, TemporalNamespace: "default",
		WorkerConcurrency: 4, WorkerMetricsAddr: addr,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, cfg, slog.New(slog.NewTextHandler(t.Output(), nil))) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
			t.Error("the metrics port still answers after Run returned")
		}
	}()

	var page string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get("http://" + addr + "/metrics"); err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			page = string(body)
			if sdkCounted.MatchString(page) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !sdkCounted.MatchString(page) {
		t.Error("no request to Temporal is counted in temporal_request_total")
	}
	for _, want := range []string{
		"\n" + `bgcheck_delivery_attempts_total{outcome="succeeded"} 0`,
		"\n" + `bgcheck_dispatcher_workflow_starts_total{result="failed"} 0`,
		"\ngo_goroutines ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the worker's /metrics lacks %q", strings.TrimPrefix(want, "\n"))
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", page)
	}
}
