package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The outcomes of one delivery attempt, the values of the outcome label.
const (
	// OutcomeSucceeded: the endpoint answered 2xx.
	OutcomeSucceeded = "succeeded"
	// OutcomeFailedAttempt: the attempt failed and another follows.
	OutcomeFailedAttempt = "failed_attempt"
	// OutcomeFailedFinal: the last attempt of the schedule failed; the delivery has failed.
	OutcomeFailedFinal = "failed_final"
	// OutcomeCanceled: nothing was sent, the delivery or its endpoint being gone or disabled.
	OutcomeCanceled = "canceled"
)

// Worker is the worker process's own metrics (the Temporal SDK's are beside them, under
// temporal_). A nil *Worker counts nothing.
type Worker struct {
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
}

// NewWorker registers the worker's metrics in reg.
func NewWorker(reg prometheus.Registerer) *Worker {
	m := &Worker{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "delivery_attempts_total",
			Help: "Delivery attempts recorded, by outcome: succeeded, failed_attempt (a retry follows), " +
				"failed_final (the delivery has failed), canceled (nothing sent: the delivery or its endpoint is gone or disabled).",
		}, []string{"outcome"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "delivery_attempt_duration_seconds",
			Help:    "Time of one delivery POST, from connecting to reading the answer, by outcome (canceled attempts send nothing and are not timed).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30},
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.attempts, m.attemptDuration)
	for _, o := range []string{OutcomeSucceeded, OutcomeFailedAttempt, OutcomeFailedFinal, OutcomeCanceled} {
		m.attempts.WithLabelValues(o)
	}
	return m
}

// Attempt records one attempt that sent a request and took d.
func (m *Worker) Attempt(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	m.attemptDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// Canceled records an attempt that found its delivery canceled and sent nothing.
func (m *Worker) Canceled() {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(OutcomeCanceled).Inc()
}
