// Package worker registers bgcheck's workflows and activities on a Temporal worker. Any number of
// workers may poll the task queue beside any number of API instances.
package worker

import (
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/workflows"
)

// Options tunes a worker.
type Options struct {
	// Concurrency is how many delivery attempts run at once (local activities), and bounds the
	// workflow tasks in flight.
	Concurrency int
}

// New returns a worker on workflows.TaskQueue with the delivery workflow and its activities
// registered; call Run or Start on it.
//
// On Stop (SIGTERM) the worker stops polling and gives attempts in flight up to
// activities.AttemptTimeout and a margin to finish; an attempt cut short is run again by the
// next worker that picks the workflow up.
func New(c client.Client, acts *activities.Activities, opts Options) sdkworker.Worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 200
	}
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{
		MaxConcurrentLocalActivityExecutionSize: opts.Concurrency,
		MaxConcurrentWorkflowTaskExecutionSize:  opts.Concurrency,
		MaxConcurrentWorkflowTaskPollers:        8,
		// Every activity is local: no activity task polling at all.
		LocalActivityWorkerOnly: true,
		WorkerStopTimeout:       activities.AttemptTimeout + 5*time.Second,
	})
	w.RegisterWorkflow(workflows.DeliveryWorkflow)
	w.RegisterActivity(acts)
	return w
}

// NewChecks returns a worker on workflows.CheckTaskQueue with the check, adverse-action and
// dispute workflows and their activities registered. Checks run on their own queue, so their workers and delivery workers
// scale apart; bgcheck-worker runs one of each.
func NewChecks(c client.Client, acts *activities.Checks, adverse *activities.AdverseActions, disputes *activities.Disputes) sdkworker.Worker {
	w := sdkworker.New(c, workflows.CheckTaskQueue, sdkworker.Options{})
	w.RegisterWorkflow(workflows.CheckWorkflow)
	w.RegisterWorkflow(workflows.AdverseActionWorkflow)
	w.RegisterWorkflow(workflows.DisputeWorkflow)
	w.RegisterActivity(acts)
	w.RegisterActivity(adverse)
	w.RegisterActivity(disputes)
	return w
}
