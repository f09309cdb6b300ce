package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var oldestPendingDesc = prometheus.NewDesc(namespace+"_oldest_pending_delivery_age_seconds",
	"Age of the oldest delivery still pending, read in the database at scrape time (0 when none is). "+
		"A healthy delivery is pending for at most its retry schedule (about 27 hours by default); "+
		"past that, something is stuck.",
	nil, nil)

type oldestPending struct {
	oldest  func(context.Context) (time.Time, error)
	timeout time.Duration
}

// NewOldestPending returns a collector of bgcheck_oldest_pending_delivery_age_seconds that calls
// oldest (such as postgres.(*DB).OldestPendingDelivery) at each scrape, bounded by timeout.
func NewOldestPending(oldest func(context.Context) (time.Time, error), timeout time.Duration) prometheus.Collector {
	return oldestPending{oldest: oldest, timeout: timeout}
}

func (o oldestPending) Describe(ch chan<- *prometheus.Desc) { ch <- oldestPendingDesc }

func (o oldestPending) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	t, err := o.oldest(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(oldestPendingDesc, err)
		return
	}
	age := 0.0
	if !t.IsZero() {
		age = time.Since(t).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(oldestPendingDesc, prometheus.GaugeValue, age)
}
