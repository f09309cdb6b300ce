package workflows_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/workflows"
)

type invoiceOutbox struct {
	mu   sync.Mutex
	sent []mail.Invoice
}

func (o *invoiceOutbox) SendInvoice(_ context.Context, inv mail.Invoice) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, inv)
	return nil
}

// The schedule's run on 1 November invoices October, with the real activities on a real
// database: one invoice per account with live usage, mailed to its admins once. Running the
// period again (a retried schedule, an operator's rerun) makes nothing new and mails nothing.
func TestInvoicingInvoicesTheMonthBeforeOnce(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "billing@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet, _, err := db.Bootstrap(ctx, "Quiet", postgres.NewUser{Email: "quiet@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, u := range []struct {
		account string
		mode    string
		at      time.Time
	}{
		{acct.ID, "live", october.AddDate(0, 0, 2)}, {acct.ID, "live", october.AddDate(0, 0, 9)},
		{quiet.ID, "test", october.AddDate(0, 0, 2)}, // test usage is never invoiced
	} {
		if _, err := db.Pool().Exec(ctx, `INSERT INTO usage_records (id, account_id, mode, check_id, package, unit_price_cents, created_at)
			VALUES ($1, $2, $3, $4, 'basic', 2999, $5)`, bgcheck.NewID(bgcheck.PrefixUsageRecord), u.account, u.mode, bgcheck.NewID(bgcheck.PrefixCheck), u.at); err != nil {
			t.Fatal(err)
		}
	}
	outbox := &invoiceOutbox{}
	run := func() int {
		var suite testsuite.WorkflowTestSuite
		suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
		env := suite.NewTestWorkflowEnvironment()
		env.SetStartTime(october.AddDate(0, 1, 0)) // the schedule fires at 00:00 on 1 November
		env.RegisterWorkflow(workflows.InvoicingWorkflow)
		env.RegisterWorkflow(workflows.InvoiceWorkflow)
		env.RegisterActivity(&activities.Billing{DB: db, Mailer: outbox, PortalURL: "https://portal.example.com"})
		env.ExecuteWorkflow(workflows.InvoicingWorkflow, workflows.InvoicingInput{})
		var n int
		if err := env.GetWorkflowResult(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := run(); n != 1 {
		t.Fatalf("invoiced %d accounts, want 1", n)
	}
	if n := run(); n != 1 {
		t.Fatalf("the rerun saw %d accounts", n)
	}
	page, err := db.ListInvoices(ctx, acct.ID, bgcheck.ListParams{Limit: 10})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("invoices %+v, %v", page.Data, err)
	}
	inv := page.Data[0]
	if inv.TotalCents != 5998 || inv.Period != "2026-10" {
		t.Fatalf("invoice %+v", inv)
	}
	if len(outbox.sent) != 1 || outbox.sent[0].Number != inv.Number || outbox.sent[0].Total != "$59.98" ||
		len(outbox.sent[0].To) != 1 || outbox.sent[0].To[0] != "billing@acme.test" {
		t.Fatalf("mails %+v", outbox.sent)
	}
}
