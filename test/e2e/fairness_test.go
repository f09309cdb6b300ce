package e2e

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
)

// One endpoint that never answers must not starve another: with the worker's 12 slots and 4
// attempts in flight per endpoint, 40 events to a black hole (each attempt holding its slot for
// the 30 s timeout) leave 8 slots to the healthy endpoint, whose 10 deliveries all succeed while
// the black hole's first attempts are still waiting. Without the limit the black hole takes every
// slot and the healthy endpoint waits out the timeout. The latencies are logged for the record.
func TestABlackHoledEndpointDoesNotStarveAnother(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.cfg.WorkerConcurrency, s.cfg.WorkerEndpointConcurrency = 12, 4
	s.startAPI()
	s.startWorker()

	hold := make(chan struct{})
	blackHole := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select { // never answers, until the test ends
		case <-hold:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(hold) })
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	healthy := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived[r.Header.Get("X-Service-Event-Id")] = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	hole := s.createEndpoint(blackHole.URL + "/hooks")
	// The black hole subscribes to check.completed only, the healthy endpoint to report.ready.
	s.call("PATCH", "/api/v1/webhooks/endpoints/"+hole.ID, map[string]any{"events": []string{webhook.EventCheckCompleted}}, http.StatusOK, nil)
	var ok endpointCreated
	s.call("POST", "/api/v1/webhooks/endpoints", map[string]any{"url": healthy.URL + "/hooks", "events": []string{webhook.EventReportReady}}, http.StatusCreated, &ok)

	for range 40 {
		s.sendTestEvent(webhook.EventCheckCompleted)
	}
	waitFor(t, 20*time.Second, "the black hole's attempts fill its share", func() bool { return len(blackHole.got()) >= 4 })
	sent := map[string]time.Time{}
	for range 10 {
		ev := s.sendTestEvent(webhook.EventReportReady)
		sent[ev.ID] = time.Now()
	}
	waitFor(t, 60*time.Second, "the healthy endpoint's deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived) == len(sent)
	})
	// No black-hole attempt has timed out yet (30 s), so none has been recorded: the healthy
	// endpoint was served while every one of them still held its slot.
	var recorded int
	if err := s.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
		WHERE d.endpoint_id = $1`, hole.ID).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != 0 {
		t.Fatalf("%d black-hole attempts timed out before the healthy endpoint was served", recorded)
	}
	if n := len(blackHole.got()); n > 4 {
		t.Fatalf("%d attempts in flight to the black hole, limit 4", n)
	}
	var latencies []time.Duration
	mu.Lock()
	for id, at := range arrived {
		latencies = append(latencies, at.Sub(sent[id]))
	}
	mu.Unlock()
	slices.Sort(latencies)
	t.Logf("healthy endpoint beside a black hole: %d deliveries, latency median %s, max %s",
		len(latencies), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
}
