// Package dispatcher starts delivery workflows for deliveries that PostgreSQL holds but Temporal
// does not yet run. Deliveries are written in the same transaction as their event (an outbox);
// the dispatcher starts their workflows right after the commit, and keeps trying for any it could
// not start (Temporal down, the API killed between commit and start), so none is lost.
package dispatcher

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
	// Parallel is how many workflow starts are in flight at once (default 32).
	Parallel int
	// PollInterval is how often the outbox is read without a notification (default 1 s): the
	// bound on how long a delivery waits after Temporal comes back.
	PollInterval time.Duration
	// StartTimeout bounds one start request (default 5 s).
	StartTimeout time.Duration
	// Metrics counts workflow starts; nil counts nothing.
	Metrics *metrics.API
}

// Dispatcher starts the workflows of undispatched deliveries.
type Dispatcher struct {
	db       *postgres.DB
	temporal client.Client
	opts     Options
	log      *slog.Logger
	wake     chan struct{}
}

// New returns a dispatcher; call Run.
func New(db *postgres.DB, c client.Client, opts Options, log *slog.Logger) *Dispatcher {
	if opts.Schedule == nil {
		opts.Schedule = workflows.DefaultRetrySchedule
	}
	if opts.Batch <= 0 {
		opts.Batch = 200
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 32
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Second
	}
	return &Dispatcher{db: db, temporal: c, opts: opts, log: log, wake: make(chan struct{}, 1)}
}

// Poke asks for a round at once; pokes that arrive while one is pending coalesce.
func (d *Dispatcher) Poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx ends: whenever PostgreSQL announces new deliveries (LISTEN), when
// poked, and every PollInterval regardless.
func (d *Dispatcher) Run(ctx context.Context) {
	go d.db.Listen(ctx, postgres.DeliveriesChannel, d.Poke, d.log)
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	for {
		d.drain(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-tick.C:
		}
	}
}

// drain runs rounds until the outbox is empty, a round fails, or nothing could be started.
func (d *Dispatcher) drain(ctx context.Context) {
	for ctx.Err() == nil {
		claimed, started, err := d.DispatchOnce(ctx)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("dispatch deliveries", "err", err)
			}
			return
		}
		if claimed < d.opts.Batch || started == 0 {
			return
		}
	}
}

// DispatchOnce claims one batch of undispatched deliveries and starts their workflows. It returns
// how many it claimed and how many it started (or found already started).
func (d *Dispatcher) DispatchOnce(ctx context.Context) (claimed, started int, err error) {
	claimed, err = d.db.DispatchPending(ctx, d.opts.Batch, func(batch []postgres.Dispatch) []string {
		ids := d.start(ctx, batch)
		started = len(ids)
		return ids
	})
	return claimed, started, err
}

// start starts one workflow per delivery, opts.Parallel at a time, and returns the ids of the
// deliveries whose workflow now exists.
func (d *Dispatcher) start(ctx context.Context, batch []postgres.Dispatch) []string {
	var (
		mu      sync.Mutex
		started = make([]string, 0, len(batch))
		wg      sync.WaitGroup
		sem     = make(chan struct{}, d.opts.Parallel)
		failed  error
		nfailed int
	)
	for _, item := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := d.startOne(ctx, item)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed, nfailed = err, nfailed+1
				return
			}
			started = append(started, item.DeliveryID)
		}()
	}
	wg.Wait()
	d.opts.Metrics.WorkflowStarts(len(started), nfailed)
	if nfailed > 0 {
		d.log.Warn("could not start delivery workflows; they stay queued and are retried",
			"failed", nfailed, "started", len(started), "err", failed)
	}
	return started
}

func (d *Dispatcher) startOne(ctx context.Context, item postgres.Dispatch) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.StartTimeout)
	defer cancel()
	_, err := d.temporal.ExecuteWorkflow(ctx, StartOptions(item), workflows.DeliveryWorkflow, workflows.DeliveryInput{
		DeliveryID:   item.DeliveryID,
		FirstAttempt: item.AttemptCount + 1,
		Schedule:     d.opts.Schedule,
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
