package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/mail/mailtest"
	"github.com/bgcheck/bgcheck/workflows"
)

// The worker creates the monthly invoice schedule on the dev server; triggered, it invoices the
// month before from its live usage and mails the admins over real SMTP; triggered again, it makes
// no second invoice and sends no second mail.
func TestTheInvoiceScheduleInvoicesLastMonthOnce(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	inbox := mailtest.NewServer(t, mailtest.Options{})
	s.cfg.SMTPURL = "smtp://" + inbox.Addr + "?from=bgcheck%40example.com"
	s.startWorker()
	ctx := context.Background()
	var accountID, adminEmail string
	if err := s.db.Pool().QueryRow(ctx, `SELECT a.id, u.email FROM accounts a JOIN users u ON u.account_id = a.id LIMIT 1`).
		Scan(&accountID, &adminEmail); err != nil {
		t.Fatal(err)
	}
	thisMonth, _ := bgcheck.PeriodOf(time.Now())
	lastMonth := thisMonth.AddDate(0, -1, 0)
	for _, pkg := range []struct {
		name  string
		cents int
	}{{"basic", 2999}, {"basic", 2999}, {"standard", 5499}} {
		if _, err := s.db.Pool().Exec(ctx, `INSERT INTO usage_records (id, account_id, mode, check_id, package, unit_price_cents, created_at)
			VALUES ($1, $2, 'live', $3, $4, $5, $6)`, bgcheck.NewID(bgcheck.PrefixUsageRecord), accountID, bgcheck.NewID(bgcheck.PrefixCheck),
			pkg.name, pkg.cents, lastMonth.AddDate(0, 0, 3)); err != nil {
			t.Fatal(err)
		}
	}
	tc := s.temporalClient()
	schedule := tc.ScheduleClient().GetHandle(ctx, workflows.InvoiceScheduleID)
	waitFor(t, 30*time.Second, "the worker creates the invoice schedule", func() bool {
		_, err := schedule.Describe(ctx)
		return err == nil
	})
	runs := func(n int) {
		if err := schedule.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the schedule's invoicing runs complete", func() bool {
			d, err := schedule.Describe(ctx)
			if err != nil || len(d.Info.RecentActions) < n {
				return false
			}
			for _, a := range d.Info.RecentActions {
				desc, err := tc.DescribeWorkflowExecution(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
				if err != nil || desc.GetWorkflowExecutionInfo().GetCloseTime() == nil {
					return false
				}
			}
			return true
		})
	}
	runs(1)
	msg := inbox.WaitFor(t, adminEmail, 30*time.Second)
	if !strings.Contains(msg.Text, "$114.97") || !strings.Contains(msg.Header.Get("Subject"), lastMonth.Format("2006-01")) {
		t.Fatalf("the invoice mail: %s\n%s", msg.Header.Get("Subject"), msg.Text)
	}
	runs(2)
	var invoices int
	if err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM invoices WHERE account_id = $1`, accountID).Scan(&invoices); err != nil || invoices != 1 {
		t.Fatalf("%d invoices after two runs, %v", invoices, err)
	}
	if n := len(inbox.Messages()); n != 1 {
		t.Fatalf("%d mails after two runs, want 1", n)
	}
}
