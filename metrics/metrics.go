// Package metrics defines bgcheck's Prometheus metrics. Each process makes its own registry
// (NewRegistry, never the global default), registers the metrics it has, hands them to the code
// that counts, and serves the registry at /metrics (Handler). Every name starts with bgcheck_.
//
// The methods that count are safe on a nil receiver and then do nothing, so code instrumented
// with them runs unchanged where no metrics are wanted, as in most tests.
package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "bgcheck"

// NewRegistry returns a registry with the Go runtime's and the process's collectors (go_*,
// process_*), for one process's metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves g in the Prometheus text format. A collector that fails (the database did not
// answer in time) is logged and left out; the rest of the page is still served.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      errorLog{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog is promhttp's Logger on slog.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Println(v ...any) {
	e.log.Warn("metrics: " + fmt.Sprint(v...))
}
