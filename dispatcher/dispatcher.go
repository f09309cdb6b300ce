// Package dispatcher owns the delivery workflows' lives in Temporal: it starts them for
// deliveries that PostgreSQL holds but Temporal does not yet run, cancels them for deliveries the
// database has canceled, and reconciles the two when they disagree. Deliveries are written in
// the same transaction as their event (an outbox); the dispatcher starts their workflows right
// after the commit, and keeps trying for any it could not start (Temporal down, the API killed
// between commit and start), so none is lost.
package dispatcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck/metrics"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/workflows"
)

// Options tunes a dispatcher; zero values take the defaults.
type Options struct {
	// Schedule is the retry schedule given to every new workflow.
	Schedule []time.Duration
	// Batch is how many deliveries one round claims (default 200).
	Batch int
	// Parallel is how many workflow starts are in flight at once (default 64: at 250 events/s
	// on two cores, 32 left deliveries waiting for their batch, p99 893 ms against 315 ms).
	Parallel int
	// PollInterval is how often the outbox is read without a notification (default 1 s): the
	// bound on how long a delivery waits after Temporal comes back.
	PollInterval time.Duration
	// StartTimeout bounds one start request (default 5 s).
	StartTimeout time.Duration
	// Metrics counts workflow starts; nil counts nothing.
	Metrics *metrics.Dispatcher
	// EndpointDisableAfter is how long an endpoint may fail before its health workflow disables
	// it; zero never disables.
	EndpointDisableAfter time.Duration
}

// Dispatcher starts the workflows of undispatched deliveries.
type Dispatcher struct {
	db       *postgres.DB
	temporal client.Client
	opts     Options
	log      *slog.Logger
	wake     chan struct{}
	// outboxesDue says the next round reads every outbox (cancels, checks, adverse actions,
	// disputes, health checks, resumes, recoveries), not only new deliveries: set by a Poke, by
	// a notification of other rows than new deliveries, and every PollInterval.
	outboxesDue atomic.Bool

	// outage is the error of the current outage (database or Temporal), logged when it begins
	// and when it ends rather than once a round; nil when all is well. checkTrouble is the same
	// for check workflows.
	outage       error
	checkTrouble error
}

// Lease is how long a claimed delivery stays away from other dispatchers: long enough for a
// batch's starts (Batch / Parallel × StartTimeout), short enough that the rows of a dispatcher
// that died mid-batch come back soon.
const Lease = 2 * time.Minute

// maxOutageBackoff bounds the wait between rounds while Temporal or the database is down.
const maxOutageBackoff = 30 * time.Second

// New returns a dispatcher; call Run.
func New(db *postgres.DB, c client.Client, opts Options, log *slog.Logger) *Dispatcher {
	if opts.Schedule == nil {
		opts.Schedule = workflows.DefaultRetrySchedule
	}
	if opts.Batch <= 0 {
		opts.Batch = 200
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 64
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Second
	}
	d := &Dispatcher{db: db, temporal: c, opts: opts, log: log, wake: make(chan struct{}, 1)}
	d.outboxesDue.Store(true)
	return d
}

// Poke asks for a round of every outbox at once; pokes that arrive while one is pending
// coalesce.
func (d *Dispatcher) Poke() {
	d.outboxesDue.Store(true)
	d.wakeUp()
}

// notified is a notification on postgres.DeliveriesChannel. One of new deliveries only (the
// events' announcements) wakes a round that only claims deliveries: at 150 events/s a round
// claimed one or two, and reading the seven other outboxes each time cost PostgreSQL about
// eight transactions an event.
func (d *Dispatcher) notified(payload string) {
	if payload != postgres.NewDeliveriesOnly {
		d.outboxesDue.Store(true)
	}
	d.wakeUp()
}

func (d *Dispatcher) wakeUp() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx ends: whenever PostgreSQL announces new deliveries (LISTEN), when
// poked, and every PollInterval regardless. While Temporal or the database is down it backs off
// (up to 30 s between rounds) and ignores pokes, and it logs the outage once when it begins and
// once when it ends.
func (d *Dispatcher) Run(ctx context.Context) {
	go d.db.Listen(ctx, postgres.DeliveriesChannel, d.notified, d.log)
	backoff := d.opts.PollInterval
	for {
		d.drain(ctx)
		wait := d.opts.PollInterval
		if d.outage != nil {
			backoff = min(2*backoff, maxOutageBackoff)
			wait = backoff
		} else {
			backoff = d.opts.PollInterval
		}
		timer := time.NewTimer(wait)
		wake := d.wake
		if d.outage != nil {
			wake = nil
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-wake:
		case <-timer.C:
			d.outboxesDue.Store(true)
		}
		timer.Stop()
	}
}

// drain sends the pending workflow cancels and works the domain's outboxes when they are due,
// then runs rounds of delivery starts until the outbox is empty or a round fails or starts
// nothing.
func (d *Dispatcher) drain(ctx context.Context) {
	if d.outboxesDue.Swap(false) {
		if !d.drainOutboxes(ctx) {
			return
		}
	}
	for ctx.Err() == nil {
		claimed, started, err := d.DispatchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		d.noteOutage(err)
		if err != nil || claimed < d.opts.Batch || started == 0 {
			return
		}
	}
}

// drainOutboxes sends the pending workflow cancels and starts or signals the domain's
// workflows; it reports false when the database or Temporal is out and the round should end.
func (d *Dispatcher) drainOutboxes(ctx context.Context) bool {
	if err := d.cancelWorkflows(ctx); err != nil {
		if ctx.Err() == nil {
			d.noteOutage(err)
		}
		d.outboxesDue.Store(true) // the next round tries again
		return false
	}
	// Checks go apart from deliveries: a check that cannot start (say, a cluster without the
	// CheckId search attribute) must not hold up a single delivery.
	// Each kind goes on whatever another met: a dispute's release must not wait on a check's start.
	err := errors.Join(d.dispatchChecks(ctx), d.dispatchAdverseActions(ctx), d.dispatchDisputes(ctx), d.dispatchHealthChecks(ctx),
		d.signalResumes(ctx), d.startRecoveries(ctx))
	if ctx.Err() == nil {
		d.noteCheckTrouble(err)
	}
	return ctx.Err() == nil
}

// noteOutage logs the start and the end of an outage, not every failed round.
func (d *Dispatcher) noteOutage(err error) {
	switch {
	case err != nil && d.outage == nil:
		d.log.Error("cannot dispatch deliveries; they stay queued in PostgreSQL and are retried with backoff", "err", err)
	case err == nil && d.outage != nil:
		d.log.Info("dispatching deliveries again", "after", d.outage.Error())
	}
	d.outage = err
}

// noteCheckTrouble logs the start and the end of a spell in which check workflows cannot be
// started or signaled.
func (d *Dispatcher) noteCheckTrouble(err error) {
	switch {
	case err != nil && d.checkTrouble == nil:
		d.log.Error("cannot start or signal check workflows; they stay recorded and are retried", "err", err)
	case err == nil && d.checkTrouble != nil:
		d.log.Info("check workflows start again", "after", d.checkTrouble.Error())
	}
	d.checkTrouble = err
}

// errTemporalRefusedAll marks a round in which no start succeeded: Temporal is down, not a row.
type errTemporalRefusedAll struct{ err error }

func (e errTemporalRefusedAll) Error() string {
	return "temporal refused every workflow start: " + e.err.Error()
}
func (e errTemporalRefusedAll) Unwrap() error { return e.err }

// DispatchOnce claims one batch of undispatched deliveries with a lease, starts their workflows
// without holding any database lock, and records the outcome: started rows are marked
// dispatched; when some started and others failed, the failed rows back off one by one (the
// row is the problem); when none started, the leases are released without blame and the round
// reports an error (Temporal is the problem). It returns how many it claimed and started.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (claimed, started int, err error) {
	batch, err := d.db.ClaimDispatches(ctx, d.opts.Batch, Lease)
	if err != nil || len(batch) == 0 {
		return 0, 0, err
	}
	ok, failed := d.start(ctx, batch)
	// The outcome is recorded even if ctx ended meanwhile: a started workflow must not be
	// started again by whoever picks the row up after the lease.
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.db.MarkDispatched(recordCtx, ok); err != nil {
		return len(batch), 0, err // the rows come back after the lease; their starts are "already started" then
	}
	if len(ok) == 0 && len(failed) > 0 {
		ids := make([]string, 0, len(failed))
		var last error
		for id, ferr := range failed {
			ids = append(ids, id)
			last = ferr
		}
		if err := d.db.ReleaseDispatches(recordCtx, ids); err != nil {
			return len(batch), 0, err
		}
		return len(batch), 0, errTemporalRefusedAll{last}
	}
	for id, ferr := range failed {
		if err := d.db.DeferDispatch(recordCtx, id, ferr.Error()); err != nil {
			return len(batch), len(ok), err
		}
		d.log.Warn("could not start a delivery's workflow; it backs off and is retried", "delivery_id", id, "err", ferr)
	}
	return len(batch), len(ok), nil
}

// start starts one workflow per delivery, opts.Parallel at a time, and returns the ids of the
// deliveries whose workflow now exists and the errors of those whose start failed.
func (d *Dispatcher) start(ctx context.Context, batch []postgres.Dispatch) (started []string, failed map[string]error) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, d.opts.Parallel)
	)
	started, failed = make([]string, 0, len(batch)), map[string]error{}
	for _, item := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := d.startOne(ctx, item)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[item.DeliveryID] = err
				return
			}
			started = append(started, item.DeliveryID)
		}()
	}
	wg.Wait()
	d.opts.Metrics.WorkflowStarts(len(started), len(failed))
	return started, failed
}

func (d *Dispatcher) startOne(ctx context.Context, item postgres.Dispatch) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	_, err := d.temporal.ExecuteWorkflow(ctx, StartOptions(item), workflows.DeliveryWorkflow, workflows.DeliveryInput{
		DeliveryID:   item.DeliveryID,
		FirstAttempt: item.AttemptCount + 1,
		Schedule:     d.opts.Schedule,
		Behaviour:    workflows.BehaviourCurrent,
	})
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil // started before, by us or another instance: the delivery is in Temporal's hands
	}
	return err
}

// StartOptions are the options of a delivery's workflow: its id derived from the delivery, and
// the search attributes operators look it up by.
func StartOptions(item postgres.Dispatch) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        workflows.WorkflowID(item.DeliveryID, item.Series),
		TaskQueue: workflows.TaskQueue,
		// Started by a process that also polls the delivery queue on the same client, the
		// workflow's first task goes to this process's worker in the start's own answer: no
		// trip through matching, no poll, one history transaction fewer (4.95 against 7.42
		// Temporal CPU-ms per delivery, make bench-delivery). Without a free slot, or in a
		// process with no worker, it is an ordinary start.
		EnableEagerStart: true,
		// A finished series is never run again under the same id: a redelivery is a new series.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.EventIDKey.ValueSet(item.EventID),
			workflows.EventTypeKey.ValueSet(item.EventType),
			workflows.EndpointIDKey.ValueSet(item.EndpointID),
			workflows.AccountIDKey.ValueSet(item.AccountID),
			workflows.DeliveryStatusKey.ValueSet("pending"),
		),
	}
}
