package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
)

// InvoiceScheduleID is the Temporal Schedule that runs InvoicingWorkflow when each month ends.
const InvoiceScheduleID = "bgcheck-invoices"

// InvoiceScheduleCron fires at 00:15 UTC on the first of each month: the month before has ended,
// and a consent whose transaction began before midnight (its usage dated in that month) has long
// committed.
const InvoiceScheduleCron = "15 0 1 * *"

// InvoicingInput names the period to invoice; the zero value means the month before the one the
// workflow runs in (what the schedule passes).
type InvoicingInput struct {
	PeriodStart time.Time
}

// InvoiceWorkflowID is the id of one account's invoice workflow for one period.
func InvoiceWorkflowID(accountID string, periodStart time.Time) string {
	return "invoice-" + accountID + "-" + periodStart.UTC().Format("2006-01")
}

// InvoicingWorkflow invoices a period: one InvoiceWorkflow per account with live usage in it.
// Running it again for the same period makes nothing new: each invoice is issued and mailed once.
func InvoicingWorkflow(ctx workflow.Context, in InvoicingInput) (int, error) {
	var acts *activities.Billing
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	start := in.PeriodStart
	if start.IsZero() {
		thisMonth, _ := bgcheck.PeriodOf(workflow.Now(ctx))
		start = thisMonth.AddDate(0, -1, 0)
	}
	start, _ = bgcheck.PeriodOf(start)
	var accounts []string
	if err := workflow.ExecuteActivity(ctx, acts.AccountsToInvoice, start).Get(ctx, &accounts); err != nil {
		return 0, err
	}
	futures := make([]workflow.ChildWorkflowFuture, 0, len(accounts))
	for _, acct := range accounts {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: InvoiceWorkflowID(acct, start)})
		futures = append(futures, workflow.ExecuteChildWorkflow(cctx, InvoiceWorkflow, activities.InvoiceInput{AccountID: acct, PeriodStart: start}))
	}
	var errs []error
	for _, f := range futures {
		err := f.Get(ctx, nil)
		var running *temporal.ChildWorkflowExecutionAlreadyStartedError
		if err != nil && !errors.As(err, &running) { // another run of the period is at it already
			errs = append(errs, err)
		}
	}
	return len(accounts), errors.Join(errs...)
}

// InvoiceWorkflow issues one account's invoice of a period and mails it to the admins.
func InvoiceWorkflow(ctx workflow.Context, in activities.InvoiceInput) (string, error) {
	var acts *activities.Billing
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute},
	})
	var id string
	if err := workflow.ExecuteActivity(ctx, acts.IssueInvoice, in).Get(ctx, &id); err != nil || id == "" {
		return "", err
	}
	return id, workflow.ExecuteActivity(ctx, acts.MailInvoice, id).Get(ctx, nil)
}
