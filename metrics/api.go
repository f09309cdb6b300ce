package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// API is the API process's metrics: its HTTP traffic, rate-limit refusals, events, and the
// dispatcher that starts delivery workflows. The zero of it is not usable; a nil *API counts
// nothing.
type API struct {
	requests          *prometheus.CounterVec
	requestDuration   *prometheus.HistogramVec
	rateLimited       *prometheus.CounterVec
	eventsAccepted    *prometheus.CounterVec
	deliveriesCreated prometheus.Counter
}

// NewAPI registers the API's metrics in reg.
func NewAPI(reg prometheus.Registerer) *API {
	m := &API{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern (as the router knows it, never the raw path), method and status.",
		}, []string{"route", "method", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time from receiving an HTTP request to the end of its answer, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "rate_limit_refusals_total",
			Help: "Requests refused with 429 because a rate-limit budget was spent, by class (auth, consumer, platform).",
		}, []string{"class"}),
		eventsAccepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "events_accepted_total",
			Help: "Events stored by this instance, by event type.",
		}, []string{"type"}),
		deliveriesCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "deliveries_created_total",
			Help: "Deliveries written for new events (one per subscribed endpoint) by this instance.",
		}),
	}
	reg.MustRegister(m.requests, m.requestDuration, m.rateLimited, m.eventsAccepted, m.deliveriesCreated)
	return m
}

// Request records one answered request. route is the router's pattern ("" when no route
// matched); method is folded to a known verb or "other", so clients cannot mint series.
func (m *API) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	method = knownMethod(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// RateLimited records a request refused by class's limit.
func (m *API) RateLimited(class string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(class).Inc()
}

// EventAccepted records a stored event of eventType and the deliveries it fanned out to.
func (m *API) EventAccepted(eventType string, deliveries int) {
	if m == nil {
		return
	}
	m.eventsAccepted.WithLabelValues(eventType).Inc()
	m.deliveriesCreated.Add(float64(deliveries))
}
