package metrics

import "github.com/prometheus/client_golang/prometheus"

// Dispatcher counts what a worker process's dispatcher does: the workflows it starts from the
// outbox.
type Dispatcher struct {
	workflowStarts *prometheus.CounterVec
}

// NewDispatcher registers the dispatcher's metrics in reg.
func NewDispatcher(reg prometheus.Registerer) *Dispatcher {
	m := &Dispatcher{workflowStarts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "dispatcher_workflow_starts_total",
		Help: "Delivery workflow starts by the dispatcher, by result: ok (started, or found already started) or failed (retried next round).",
	}, []string{"result"})}
	reg.MustRegister(m.workflowStarts)
	// Series that exist from the start, so rates and alerts see zeros rather than nothing.
	for _, r := range []string{"ok", "failed"} {
		m.workflowStarts.WithLabelValues(r)
	}
	return m
}

// WorkflowStarts records one dispatcher round's workflow starts; a nil Dispatcher counts nothing.
func (m *Dispatcher) WorkflowStarts(ok, failed int) {
	if m == nil {
		return
	}
	m.workflowStarts.WithLabelValues("ok").Add(float64(ok))
	m.workflowStarts.WithLabelValues("failed").Add(float64(failed))
}
