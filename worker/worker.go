// Package worker registers bgcheck's workflows and activities on a Temporal worker. Any number of
// workers may poll the task queue beside any number of API instances.
package worker

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
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

// DomainActivities are the activities of the background-check domain's workflows.
type DomainActivities struct {
	Checks   *activities.Checks
	Adverse  *activities.AdverseActions
	Disputes *activities.Disputes
	Billing  *activities.Billing
	Health   *activities.EndpointHealth
	Recovery *activities.Recoveries
	// SSOMetadata refreshes SAML connections' IdP metadata; nil registers nothing.
	SSOMetadata *activities.SSOMetadata
}

// NewChecks returns a worker on workflows.CheckTaskQueue with the domain's workflows (checks,
// adverse actions, disputes, invoicing, endpoint health) and their activities registered. They run on their own
// queue, so their workers and delivery workers scale apart; bgcheck-worker runs one of each.
func NewChecks(c client.Client, acts DomainActivities) sdkworker.Worker {
	w := sdkworker.New(c, workflows.CheckTaskQueue, sdkworker.Options{})
	w.RegisterWorkflow(workflows.CheckWorkflow)
	w.RegisterWorkflow(workflows.AdverseActionWorkflow)
	w.RegisterWorkflow(workflows.DisputeWorkflow)
	w.RegisterWorkflow(workflows.InvoicingWorkflow)
	w.RegisterWorkflow(workflows.InvoiceWorkflow)
	w.RegisterWorkflow(workflows.EndpointHealthWorkflow)
	w.RegisterWorkflow(workflows.RecoveryWorkflow)
	w.RegisterActivity(acts.Checks)
	w.RegisterActivity(acts.Adverse)
	w.RegisterActivity(acts.Disputes)
	w.RegisterActivity(acts.Billing)
	w.RegisterActivity(acts.Health)
	w.RegisterActivity(acts.Recovery)
	w.RegisterWorkflow(workflows.SAMLMetadataRefreshWorkflow)
	if acts.SSOMetadata != nil {
		w.RegisterActivity(acts.SSOMetadata)
	}
	return w
}

// EnsureInvoiceSchedule creates the Temporal Schedule that invoices each month when it ends,
// unless it exists: every worker calls it at start, and one of them creates it.
func EnsureInvoiceSchedule(ctx context.Context, c client.Client) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   workflows.InvoiceScheduleID,
		Spec: client.ScheduleSpec{CronExpressions: []string{workflows.InvoiceScheduleCron}},
		Action: &client.ScheduleWorkflowAction{
			ID:        "invoicing",
			Workflow:  workflows.InvoicingWorkflow,
			Args:      []any{workflows.InvoicingInput{}},
			TaskQueue: workflows.CheckTaskQueue,
		},
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE,
		CatchupWindow: 7 * 24 * time.Hour,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	return err
}

// EnsureSSOMetadataSchedule creates the Temporal Schedule that refreshes SAML connections' IdP
// metadata every workflows.SSOMetadataScheduleEvery, unless it exists: every worker calls it at
// start, and one of them creates it. Runs never overlap (a slow one makes the next skip), and a
// schedule missed while no worker ran is not made up beyond one run: every run takes whatever
// is due.
func EnsureSSOMetadataSchedule(ctx context.Context, c client.Client) error {
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   workflows.SSOMetadataScheduleID,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: workflows.SSOMetadataScheduleEvery}}},
		Action: &client.ScheduleWorkflowAction{
			ID:        "sso-metadata-refresh",
			Workflow:  workflows.SAMLMetadataRefreshWorkflow,
			TaskQueue: workflows.CheckTaskQueue,
		},
		Overlap:       enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow: workflows.SSOMetadataScheduleEvery,
	})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return nil
	}
	return err
}
