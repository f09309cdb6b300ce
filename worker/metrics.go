package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"github.com/bgcheck/bgcheck/metrics"
)

// Metrics are a worker process's metrics in one registry: bgcheck's own (attempts by outcome and
// their latency) and the Temporal SDK's (temporal_*: polls, task latencies, requests to the
// server). The SDK reports through tally, whose Prometheus reporter registers in the same
// registry, so one /metrics page shows both.
type Metrics struct {
	// Deliveries counts attempts: give it to activities.Activities.
	Deliveries *metrics.Worker
	// Dispatcher counts the dispatcher's workflow starts: give it to dispatcher.Options.
	Dispatcher *metrics.Dispatcher
	// Temporal is the SDK's handler: set it as client.Options.MetricsHandler.
	Temporal client.MetricsHandler

	registry *prometheus.Registry
	scope    io.Closer
	log      *slog.Logger
}

// tallyInterval is how often tally hands the SDK's metrics to the registry: a scrape sees them at
// most this late.
const tallyInterval = time.Second

// NewMetrics builds a worker's metrics on a fresh registry; Close it when the worker stops.
func NewMetrics(log *slog.Logger) *Metrics {
	reg := metrics.NewRegistry()
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       reg,
		DefaultTimerType: tallyprom.HistogramTimerType, // histograms aggregate across workers; summaries do not
		// The default panics; a metric the SDK cannot register must not stop deliveries.
		OnRegisterError: func(err error) { log.Warn("metrics: a Temporal SDK metric could not be registered", "err", err) },
	})
	// The set-up the SDK documents for Prometheus (contrib/tally): sanitized names, "_" as
	// separator, and the naming scope that adds _total and _seconds.
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:         reporter,
		Separator:              tallyprom.DefaultSeparator,
		SanitizeOptions:        &sdktally.PrometheusSanitizeOptions,
		OmitCardinalityMetrics: true,
	}, tallyInterval)
	return &Metrics{
		Deliveries: metrics.NewWorker(reg),
		Dispatcher: metrics.NewDispatcher(reg),
		Temporal:   sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)),
		registry:   reg,
		scope:      closer,
		log:        log,
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return metrics.Handler(m.registry, m.log) }

// Close reports the SDK's metrics a last time and stops tally's reporting loop.
func (m *Metrics) Close() error { return m.scope.Close() }

// serveMetrics serves m at /metrics on addr until stop is called. It listens before returning,
// so a taken port is an error at start-up rather than a line in the log.
func serveMetrics(addr string, m *Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("worker metrics server stopped", "err", err)
		}
	}()
	log.Info("worker metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
