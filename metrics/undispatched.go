package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var undispatchedDesc = prometheus.NewDesc(namespace+"_deliveries_undispatched",
	"Pending deliveries whose workflow has not started yet (the outbox), counted in the database at scrape time: "+
		"every API instance reports the same number. It grows while Temporal is unreachable.",
	nil, nil)

// undispatched is a collector that counts the outbox when scraped.
type undispatched struct {
	count   func(context.Context) (int, error)
	timeout time.Duration
}

// NewUndispatched returns a collector of bgcheck_deliveries_undispatched that calls count (such
// as postgres.(*DB).CountUndispatched) at each scrape, bounded by timeout. The number is read at
// scrape time rather than kept up to date by the dispatcher: one query per scrape instead of one
// per dispatcher round, and right even while the dispatcher is stuck. When count fails, the
// metric is left out of that scrape and the failure logged.
func NewUndispatched(count func(context.Context) (int, error), timeout time.Duration) prometheus.Collector {
	return undispatched{count: count, timeout: timeout}
}

func (u undispatched) Describe(ch chan<- *prometheus.Desc) { ch <- undispatchedDesc }

func (u undispatched) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), u.timeout)
	defer cancel()
	n, err := u.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(undispatchedDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(undispatchedDesc, prometheus.GaugeValue, float64(n))
}
