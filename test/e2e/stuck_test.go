package e2e

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/workflows"
)

// A delivery whose workflow an operator terminated in the Temporal UI is no longer stuck
// "pending" for good: while its workflow runs, redeliver is 409, and once the workflow has ended
// the redelivery starts a new series that delivers.
func TestRedeliverAfterTheWorkflowWasTerminatedOutsideBgcheck(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.cfg.RetrySchedule = "1h" // the first attempt fails, then the workflow sleeps
	s.startAPI()
	s.startWorker()
	var healthy atomic.Bool
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ep := s.createEndpoint(rc.URL + "/hooks")
	rc.secret = ep.Secret
	s.sendTestEvent(webhook.EventReportReady)
	waitFor(t, 30*time.Second, "the first attempt fails", func() bool { return s.deliveryOf(ep.ID).AttemptCount == 1 })
	d := s.deliveryOf(ep.ID)
	if d.Status != "pending" {
		t.Fatalf("status %s", d.Status)
	}
	s.call("POST", "/api/v1/webhooks/deliveries/"+d.ID+"/redeliver", nil, http.StatusConflict, nil)

	tc := s.temporalClient()
	if err := tc.TerminateWorkflow(context.Background(), workflows.WorkflowID(d.ID, 1), "", "terminated in the Temporal UI"); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	healthy.Store(true)
	s.call("POST", "/api/v1/webhooks/deliveries/"+d.ID+"/redeliver", nil, http.StatusAccepted, nil)
	waitFor(t, 30*time.Second, "the new series delivers", func() bool { return s.deliveryOf(ep.ID).Status == "succeeded" })
}
