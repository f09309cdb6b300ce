package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal/temporaltest"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/workflows"
)

// A receiver that fails twice and then succeeds gets three signed POSTs with the same event id and
// the same bytes; the API shows the three attempts, and the Temporal UI finds the workflow by the
// event's search attributes. A redelivery sends the same bytes again as attempt 4.
func TestDeliveryRetriesSignedAndIdentical(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.startAPI()
	s.startWorker()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			http.Error(w, "not yet", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ep := s.createEndpoint(rc.URL + "/hooks")
	rc.secret = ep.Secret
	ev := s.sendTestEvent(webhook.EventCheckCompleted)

	waitFor(t, 30*time.Second, "three attempts reach the receiver", func() bool { return len(rc.got()) >= 3 })
	waitFor(t, 10*time.Second, "the delivery is recorded succeeded", func() bool { return s.deliveryOf(ep.ID).Status == "succeeded" })
	hits := rc.got()
	for i, h := range hits {
		if !h.sigOK {
			t.Errorf("attempt %d: the signature does not verify over the raw body", i+1)
		}
		if string(h.body) != string(hits[0].body) || h.header.Get("X-Service-Event-Id") != ev.ID || h.attempt != strconv.Itoa(i+1) {
			t.Errorf("attempt %d: event %s attempt %s, body equal to the first: %v",
				i+1, h.header.Get("X-Service-Event-Id"), h.attempt, string(h.body) == string(hits[0].body))
		}
	}
	if gap := hits[1].at.Sub(hits[0].at); gap < time.Second {
		t.Errorf("attempt 2 came %s after attempt 1; the schedule says 1s", gap)
	}
	d := s.deliveryOf(ep.ID)
	if d.AttemptCount != 3 || len(d.Attempts) != 3 || *d.Attempts[0].StatusCode != 500 || *d.Attempts[2].StatusCode != 204 {
		t.Fatalf("delivery %+v", d)
	}

	// Operators find the workflow by event id and see its status.
	tc := s.temporalClient()
	query := fmt.Sprintf("EventId = '%s' AND EndpointId = '%s' AND EventType = 'check.completed' AND DeliveryStatus = 'succeeded'", ev.ID, ep.ID)
	waitFor(t, 15*time.Second, "the workflow is found by its search attributes", func() bool {
		res, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		return err == nil && len(res.Executions) == 1 && res.Executions[0].Execution.WorkflowId == d.ID &&
			res.Executions[0].Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})

	// Redeliver: a fresh series with the same event id and bytes; attempt numbers run on.
	s.call("POST", "/api/v1/webhooks/deliveries/"+d.ID+"/redeliver", nil, http.StatusAccepted, nil)
	waitFor(t, 15*time.Second, "the redelivery reaches the receiver", func() bool { return len(rc.got()) >= 4 })
	last := rc.got()[3]
	if string(last.body) != string(hits[0].body) || last.attempt != "4" || !last.sigOK {
		t.Fatalf("redelivery: attempt %s, same bytes %v, signature %v", last.attempt, string(last.body) == string(hits[0].body), last.sigOK)
	}
	waitFor(t, 10*time.Second, "the redelivered series is recorded", func() bool {
		d := s.deliveryOf(ep.ID)
		return d.Status == "succeeded" && d.AttemptCount == 4
	})
	if _, err := tc.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(d.ID, 2), ""); err != nil {
		t.Fatalf("the redelivery's workflow %s: %v", workflows.WorkflowID(d.ID, 2), err)
	}
	if *flagUpdateHistory {
		saveHistory(t, tc, d.ID, "delivery_history_behaviour1.json")
	}
}

// A redirect, a server error, a refused connection and an answer slower than 30 s each count as
// a failed attempt, recorded with what went wrong.
func TestFailedAttemptKinds(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.startAPI()
	s.startWorker()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://example.com/", http.StatusFound)
	})
	broken := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	slow := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select { // answer after more than 30 s, if ever
		case <-time.After(35 * time.Second):
		case <-release:
		case <-r.Context().Done():
		}
	})
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedURL := "http://" + closed.Addr().String() + "/hooks"
	closed.Close()

	eps := map[string]string{
		"redirect": s.createEndpoint(redirect.URL).ID,
		"500":      s.createEndpoint(broken.URL).ID,
		"refused":  s.createEndpoint(refusedURL).ID,
		"slow":     s.createEndpoint(slow.URL).ID,
	}
	start := time.Now()
	s.sendTestEvent(webhook.EventReportReady)

	want := map[string]struct {
		code int
		err  string
	}{
		"redirect": {302, "redirects are not followed"},
		"500":      {500, "answered 500"},
		"refused":  {0, "connection refused"},
		"slow":     {0, "no complete answer within 30s"},
	}
	for name, epID := range eps {
		waitFor(t, 45*time.Second, name+": a first attempt is recorded", func() bool { return s.deliveryOf(epID).AttemptCount >= 1 })
		a := s.deliveryOf(epID).Attempts[0]
		code := 0
		if a.StatusCode != nil {
			code = *a.StatusCode
		}
		if code != want[name].code || a.Error == nil || !strings.Contains(*a.Error, want[name].err) {
			t.Errorf("%s: attempt 1 recorded code %d error %v, want %d and %q", name, code, a.Error, want[name].code, want[name].err)
		}
	}
	if d := s.deliveryOf(eps["slow"]); d.Attempts[0].DurationMS < 30000 || time.Since(start) < 30*time.Second {
		t.Errorf("the slow attempt was cut after %d ms, before 30 s", d.Attempts[0].DurationMS)
	}
	// The fast failures run through the whole (shortened) schedule and fail.
	for _, name := range []string{"redirect", "500", "refused"} {
		epID := eps[name]
		waitFor(t, 30*time.Second, name+": the delivery fails after 3 attempts", func() bool {
			d := s.deliveryOf(epID)
			return d.Status == "failed" && d.AttemptCount == 3
		})
	}
}

// A worker killed (SIGKILL) in the middle of an attempt loses nothing: once a worker runs again,
// the attempt is made again and the delivery succeeds. At least once, never zero times.
func TestWorkerKilledMidDeliveryStillDelivers(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.startAPI()
	inFlight := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			inFlight <- struct{}{}
			<-r.Context().Done() // hold the first attempt until its worker is gone
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	ep := s.createEndpoint(rc.URL)
	rc.secret = ep.Secret
	first := s.workerProcess()
	ev := s.sendTestEvent(webhook.EventDisputeFiled)

	select {
	case <-inFlight:
	case <-time.After(30 * time.Second):
		t.Fatal("the first attempt never arrived")
	}
	first.Kill()
	s.workerProcess()

	waitFor(t, 60*time.Second, "the delivery succeeds after the worker is replaced", func() bool { return s.deliveryOf(ep.ID).Status == "succeeded" })
	hits := rc.got()
	if len(hits) < 2 {
		t.Fatalf("%d requests", len(hits))
	}
	for _, h := range hits {
		if h.header.Get("X-Service-Event-Id") != ev.ID || !h.sigOK || string(h.body) != string(hits[0].body) {
			t.Fatalf("a repeated attempt differs: event %s signature %v", h.header.Get("X-Service-Event-Id"), h.sigOK)
		}
	}
}

// Events created while Temporal is down are accepted, wait in the outbox, and are delivered once
// Temporal starts. So are deliveries whose API process died between the commit and the start.
func TestEventsCreatedWhileTemporalIsDownAreDelivered(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	s := newStack(t, port)
	s.startAPI()
	s.startWorker() // waits for Temporal
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	ep := s.createEndpoint(rc.URL)
	rc.secret = ep.Secret
	ev := s.sendTestEvent(webhook.EventCheckCreated)
	if n, err := s.db.CountUndispatched(context.Background()); err != nil || n != 1 {
		t.Fatalf("%d deliveries wait for their workflow (%v), want 1", n, err)
	}
	time.Sleep(2 * time.Second) // the dispatcher tries, and fails, meanwhile
	if len(rc.got()) != 0 || s.deliveryOf(ep.ID).Status != "pending" {
		t.Fatal("delivered without Temporal?")
	}

	temporaltest.Start(t, devtemporal.Options{Port: port, SearchAttributes: workflows.SearchAttributes, DynamicConfig: devtemporal.Tuned()})
	up := time.Now()
	waitFor(t, 30*time.Second, "the delivery arrives after Temporal starts", func() bool { return len(rc.got()) == 1 })
	t.Logf("delivered %s after Temporal answered", time.Since(up).Round(time.Millisecond))
	if h := rc.got()[0]; h.header.Get("X-Service-Event-Id") != ev.ID || !h.sigOK {
		t.Fatal("wrong or unsigned delivery")
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// On SIGTERM a worker stops polling but lets the attempt in flight finish and be recorded: the
// receiver's answer counts, and no second worker is needed.
func TestWorkerSIGTERMLetsTheAttemptInFlightFinish(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.startAPI()
	inFlight := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			inFlight <- struct{}{}
			time.Sleep(3 * time.Second) // still answering when the worker is told to stop
		}
		w.WriteHeader(http.StatusOK)
	})
	ep := s.createEndpoint(rc.URL)
	w := s.workerProcess()
	s.sendTestEvent(webhook.EventDisputeResolved)
	select {
	case <-inFlight:
	case <-time.After(30 * time.Second):
		t.Fatal("the attempt never arrived")
	}
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the worker exited with %v after SIGTERM", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the worker did not exit after SIGTERM")
	}
	d := s.deliveryOf(ep.ID)
	if d.Status != "succeeded" || d.AttemptCount != 1 || len(rc.got()) != 1 {
		t.Fatalf("after a graceful stop: status %s, %d attempts recorded, %d received", d.Status, d.AttemptCount, len(rc.got()))
	}
}

// A paused endpoint's delivery waits across a worker's death, no attempt made or counted; resumed,
// it is delivered once, as attempt 1.
func TestPauseHoldsADeliveryAcrossAWorkerRestart(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.startAPI()
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ep := s.createEndpoint(rc.URL)
	rc.secret = ep.Secret
	s.call("POST", "/api/v1/webhooks/endpoints/"+ep.ID+"/pause", nil, http.StatusOK, nil)
	first := s.workerProcess()
	s.sendTestEvent(webhook.EventCheckCompleted)
	waitFor(t, 30*time.Second, "the delivery is held by the pause", func() bool {
		var held bool
		_ = s.db.Pool().QueryRow(context.Background(), `SELECT held_by_pause FROM deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&held)
		return held
	})
	first.Kill()
	s.workerProcess()
	time.Sleep(time.Second) // the new worker would attempt now, were the endpoint not paused
	if n := len(rc.got()); n != 0 {
		t.Fatalf("%d requests while paused", n)
	}
	s.call("POST", "/api/v1/webhooks/endpoints/"+ep.ID+"/resume", nil, http.StatusOK, nil)
	waitFor(t, 30*time.Second, "the delivery succeeds once resumed", func() bool { return s.deliveryOf(ep.ID).Status == "succeeded" })
	d := s.deliveryOf(ep.ID)
	if hits := rc.got(); len(hits) != 1 || hits[0].attempt != "1" || !hits[0].sigOK || d.AttemptCount != 1 {
		t.Fatalf("%d requests (attempt %v), delivery attempts %d: want one, attempt 1", len(hits), hits, d.AttemptCount)
	}
}
