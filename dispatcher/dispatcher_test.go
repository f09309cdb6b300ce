package dispatcher_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/dispatcher"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/workflows"
)

// temporalAddress is the dev server every test of the package shares: starting one takes seconds.
var temporalAddress string

func TestMain(m *testing.M) {
	srv, err := devtemporal.Start(context.Background(), devtemporal.Options{
		SearchAttributes: workflows.SearchAttributes, Logger: slog.New(slog.DiscardHandler),
		LogFile: os.DevNull,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Temporal dev server:", err)
		os.Exit(1)
	}
	temporalAddress = srv.Address
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

// faultyTemporal is a real Temporal client that refuses the starts refuse says to refuse, and
// counts every start request by workflow id.
type faultyTemporal struct {
	client.Client
	mu      sync.Mutex
	calls   map[string]int
	refuse  func(workflowID string) error
	cancels map[string]int
	// refuseCancels, while true, makes every CancelWorkflow fail as if Temporal were down.
	refuseCancels bool
}

func (f *faultyTemporal) CancelWorkflow(ctx context.Context, workflowID, runID string) error {
	f.mu.Lock()
	f.cancels[workflowID]++
	refuse := f.refuseCancels
	f.mu.Unlock()
	if refuse {
		return serviceerror.NewUnavailable("connection refused")
	}
	return f.Client.CancelWorkflow(ctx, workflowID, runID)
}

func (f *faultyTemporal) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	f.mu.Lock()
	f.calls[opts.ID]++
	refuse := f.refuse
	f.mu.Unlock()
	if refuse != nil {
		if err := refuse(opts.ID); err != nil {
			return nil, err
		}
	}
	return f.Client.ExecuteWorkflow(ctx, opts, wf, args...)
}

func (f *faultyTemporal) setRefuse(r func(string) error) {
	f.mu.Lock()
	f.refuse = r
	f.mu.Unlock()
}

func newTemporal(t *testing.T) *faultyTemporal {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: temporalAddress, Namespace: devtemporal.Namespace,
		Logger: slogAdapter{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &faultyTemporal{Client: c, calls: map[string]int{}, cancels: map[string]int{}}
}

// deliveries makes n pending, undispatched deliveries and returns their ids.
func deliveries(t *testing.T, db *postgres.DB, n int) []string {
	t.Helper()
	ctx := context.Background()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}
	if _, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{URL: "https://example.com/h", Events: []string{"*"}, Enabled: true, Secret: webhook.NewSecret()}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := db.CreateEvent(ctx, tn, "check.created", map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	rows, _ := db.Pool().Query(ctx, `SELECT id FROM deliveries WHERE account_id = $1 ORDER BY id`, acct.ID)
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	return ids
}

func dispatched(t *testing.T, db *postgres.DB, id string) (bool, int, string) {
	t.Helper()
	var done bool
	var failures int
	var reason *string
	if err := db.Pool().QueryRow(context.Background(), `SELECT dispatched_at IS NOT NULL, dispatch_failures, dispatch_error
		FROM deliveries WHERE id = $1`, id).Scan(&done, &failures, &reason); err != nil {
		t.Fatal(err)
	}
	if reason == nil {
		return done, failures, ""
	}
	return done, failures, *reason
}

// A round where some starts fail marks exactly the started rows dispatched; each failed row
// records why and backs off on its own instead of being retried, and logged, every second.
func TestPartialStartsMarkOnlyTheStartedAndBackOffTheRest(t *testing.T) {
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 20)
	temporal := newTemporal(t)
	bad := map[string]bool{workflows.WorkflowID(ids[3], 1): true, workflows.WorkflowID(ids[11], 1): true}
	temporal.setRefuse(func(id string) error {
		if bad[id] {
			return serviceerror.NewInvalidArgument("this one is refused")
		}
		return nil
	})
	d := dispatcher.New(db, temporal, dispatcher.Options{}, slog.New(slog.DiscardHandler))
	claimed, started, err := d.DispatchOnce(context.Background())
	if err != nil || claimed != 20 || started != 18 {
		t.Fatalf("claimed %d started %d err %v", claimed, started, err)
	}
	for _, id := range ids {
		done, failures, reason := dispatched(t, db, id)
		if bad[workflows.WorkflowID(id, 1)] {
			if done || failures != 1 || !strings.Contains(reason, "refused") {
				t.Errorf("refused %s: dispatched %v failures %d reason %q", id, done, failures, reason)
			}
			continue
		}
		if !done {
			t.Errorf("%s was started but not marked", id)
		}
		if _, err := temporal.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(id, 1), ""); err != nil {
			t.Errorf("marked %s has no workflow: %v", id, err)
		}
	}
	// The failing rows wait out their backoff: the next round does not touch them.
	if claimed, _, err := d.DispatchOnce(context.Background()); claimed != 0 || err != nil {
		t.Fatalf("next round claimed %d, %v", claimed, err)
	}
}

// With Temporal refusing everything, rows are not blamed (no failures, no backoff of their own),
// the dispatcher logs the outage once rather than every round, and when Temporal is back every
// delivery is dispatched and the recovery is logged once.
func TestTemporalOutageIsLoggedOnceAndLosesNothing(t *testing.T) {
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 30)
	temporal := newTemporal(t)
	temporal.setRefuse(func(string) error { return serviceerror.NewUnavailable("connection refused") })
	logs := &lockedBuffer{}
	d := dispatcher.New(db, temporal, dispatcher.Options{PollInterval: 20 * time.Millisecond},
		slog.New(slog.NewTextHandler(logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	time.Sleep(time.Second)
	temporal.mu.Lock()
	tries := temporal.calls[workflows.WorkflowID(ids[0], 1)]
	temporal.mu.Unlock()
	if tries < 2 {
		t.Fatalf("tried the first delivery %d times during the outage", tries)
	}
	if n := strings.Count(logs.String(), "cannot dispatch deliveries"); n != 1 {
		t.Fatalf("%d outage lines in %d rounds:\n%s", n, tries, logs.String())
	}
	for _, id := range ids {
		if done, failures, _ := dispatched(t, db, id); done || failures != 0 {
			t.Fatalf("%s during the outage: dispatched %v failures %d", id, done, failures)
		}
	}

	temporal.setRefuse(nil)
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := db.CountUndispatched(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still undispatched after Temporal came back", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(logs.String(), "dispatching deliveries again"); n != 1 {
		t.Fatalf("%d recovery lines:\n%s", n, logs.String())
	}
}

// Two dispatchers (two API instances) on one outbox start every workflow exactly once: the
// lease keeps them off each other's rows, so no start is even attempted twice.
func TestTwoDispatchersStartEachWorkflowOnce(t *testing.T) {
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 300)
	temporal := newTemporal(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		d := dispatcher.New(db, temporal, dispatcher.Options{Batch: 25, PollInterval: 20 * time.Millisecond}, slog.New(slog.DiscardHandler))
		wg.Add(1)
		go func() { defer wg.Done(); d.Run(ctx) }()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := db.CountUndispatched(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries undispatched", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	temporal.mu.Lock()
	defer temporal.mu.Unlock()
	for _, id := range ids {
		if n := temporal.calls[workflows.WorkflowID(id, 1)]; n != 1 {
			t.Errorf("%s: %d start requests", id, n)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// slogAdapter silences the Temporal SDK's own logging in these tests.
type slogAdapter struct{}

func (slogAdapter) Debug(string, ...any) {}
func (slogAdapter) Info(string, ...any)  {}
func (slogAdapter) Warn(string, ...any)  {}
func (slogAdapter) Error(string, ...any) {}

// stuckCheck creates a check in the account of the delivery deliveryID, and a Temporal client
// that refuses to start any check's workflow (as a cluster without the check search attributes
// would); it returns the account's test-mode tenant and that client.
func stuckCheck(t *testing.T, db *postgres.DB, deliveryID string) (bgcheck.Tenant, *faultyTemporal) {
	t.Helper()
	ctx := context.Background()
	var acct string
	if err := db.Pool().QueryRow(ctx, `SELECT account_id FROM deliveries WHERE id = $1`, deliveryID).Scan(&acct); err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeTest}
	email := "jane@example.com"
	cand, err := db.CreateCandidate(ctx, tn, bgcheck.Candidate{FirstName: "Jane", LastName: "Doe", Email: &email})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateCheck(ctx, tn, postgres.NewCheck{CandidateID: cand.ID, Package: "basic",
		Screenings: []string{"ssn_trace"}, InvitationTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	temporal := newTemporal(t)
	temporal.setRefuse(func(id string) error {
		if strings.HasPrefix(id, "check-") {
			return serviceerror.NewInvalidArgument("search attribute CheckId is not defined")
		}
		return nil
	})
	return tn, temporal
}

// A check whose workflow cannot start (a cluster without the check search attributes, say)
// never holds up deliveries: the check waits, recorded, and every delivery is dispatched.
func TestAStuckCheckDoesNotHoldUpDeliveries(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 5)
	_, temporal := stuckCheck(t, db, ids[0])
	logs := &lockedBuffer{}
	d := dispatcher.New(db, temporal, dispatcher.Options{PollInterval: 20 * time.Millisecond}, slog.New(slog.NewTextHandler(logs, nil)))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	defer func() { stop(); <-done }()
	waitFor(t, 20*time.Second, "every delivery dispatched", func() bool {
		n, err := db.CountUndispatched(ctx)
		return err == nil && n == 0
	})
	var started *time.Time
	if err := db.Pool().QueryRow(ctx, `SELECT workflow_started_at FROM checks`).Scan(&started); err != nil || started != nil {
		t.Fatalf("the refused check is marked started: %v %v", started, err)
	}
	if n := strings.Count(logs.String(), "cannot start or signal check workflows"); n != 1 {
		t.Fatalf("%d lines about the stuck check:\n%s", n, logs.String())
	}
}

// startsOf counts the start requests of workflows whose id begins with prefix.
func (f *faultyTemporal) startsOf(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for id, c := range f.calls {
		if strings.HasPrefix(id, prefix) {
			n += c
		}
	}
	return n
}

// A notification of new deliveries only wakes a round that claims deliveries and leaves the other
// outboxes alone; any other notification has them read at once. A check whose start Temporal
// refuses is tried again on every round that reads the checks' outbox, so its start requests
// count those rounds; the polling interval is an hour, so nothing but notifications drives them.
func TestNewDeliveriesAloneDoNotReadTheOtherOutboxes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	ids := deliveries(t, db, 1)
	tn, temporal := stuckCheck(t, db, ids[0])
	d := dispatcher.New(db, temporal, dispatcher.Options{PollInterval: time.Hour}, slog.New(slog.DiscardHandler))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(runCtx) }()
	defer func() { stop(); <-done }()

	undispatched := func() bool {
		n, err := db.CountUndispatched(ctx)
		return err == nil && n == 0
	}
	// The first round reads every outbox.
	waitFor(t, 20*time.Second, "the first round: the delivery dispatched, the check tried", func() bool {
		return undispatched() && temporal.startsOf("check-") > 0
	})
	tried := temporal.startsOf("check-")

	for range 5 {
		if _, err := db.CreateEvent(ctx, tn, "check.created", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "a new event's delivery dispatched on its notification", undispatched)
	}
	if got := temporal.startsOf("check-"); got != tried {
		t.Fatalf("rounds woken by new deliveries read the checks' outbox: %d start requests for the check, want %d", got, tried)
	}

	if _, err := db.Pool().Exec(ctx, `SELECT pg_notify($1, '')`, postgres.DeliveriesChannel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a notification without the deliveries payload has the checks' outbox read", func() bool {
		return temporal.startsOf("check-") > tried
	})
}
