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
)

// Serve answers on the listener it is given, with the database ready, and returns nil once its
// context ends. Temporal is absent here: readiness says so, and the API still starts.
func TestServeAnswersAndShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // nothing answers there
	cfg := config.Config{DatabaseURL: pgtest.NewURL(t), TemporalAddress: closed.Addr().String(), TemporalNamespace: "default"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- apiserver.Serve(ctx, ln, cfg, slog.New(slog.NewTextHandler(t.Output(), nil))) }()

	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"database":"ok"`) ||
		!strings.Contains(string(body), `"temporal":"unreachable"`) {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}

	// The wiring of the metrics: the request above counted, the outbox counted in this database,
	// the dispatcher's and the runtime's metrics on the same page.
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`bgcheck_http_requests_total{method="GET",route="/readyz",status="503"} 1` + "\n",
		"bgcheck_deliveries_undispatched 0\n",
		"\ngo_goroutines ",
	} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("/metrics (status %d) lacks %q", resp.StatusCode, want)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after its context ended", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still answering after shutdown")
	}
}
