package activities

import (
	"context"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
)

// InvoiceMailer mails issued invoices (package mail's senders).
type InvoiceMailer interface {
	SendInvoice(ctx context.Context, inv mail.Invoice) error
}

// Billing holds what the invoicing activities need.
type Billing struct {
	DB        *postgres.DB
	Mailer    InvoiceMailer
	PortalURL string
}

// AccountsToInvoice lists the accounts with live usage in the period starting at periodStart.
func (b *Billing) AccountsToInvoice(ctx context.Context, periodStart time.Time) ([]string, error) {
	start, end := bgcheck.PeriodOf(periodStart)
	return b.DB.AccountsWithUsage(ctx, start, end)
}

// InvoiceInput names one account's invoice of one period.
type InvoiceInput struct {
	AccountID   string
	PeriodStart time.Time
}

// IssueInvoice totals the account's live usage of the period into its invoice, once (a rerun
// finds the invoice issued before), and returns the invoice's id, or "" when the period had no
// live usage.
func (b *Billing) IssueInvoice(ctx context.Context, in InvoiceInput) (string, error) {
	inv, err := b.DB.IssueInvoice(ctx, in.AccountID, in.PeriodStart)
	if err != nil || inv == nil {
		return "", err
	}
	return inv.ID, nil
}

// MailInvoice mails an issued invoice to the account's admins, once: it is recorded as mailed,
// and a retry or a rerun of the period sends nothing more.
func (b *Billing) MailInvoice(ctx context.Context, id string) error {
	m, err := b.DB.FindInvoiceMail(ctx, id)
	if err != nil || m.Mailed || len(m.AdminEmails) == 0 {
		return err
	}
	inv := m.Invoice
	out := mail.Invoice{To: m.AdminEmails, AccountName: m.AccountName, Number: inv.Number, Period: inv.Period,
		Total: mail.Money(inv.TotalCents), Link: strings.TrimRight(b.PortalURL, "/") + "/dashboard/#/invoices/" + inv.ID}
	for _, l := range inv.Lines {
		out.Lines = append(out.Lines, mail.InvoiceLine{Package: l.Package, Quantity: l.Quantity,
			UnitPrice: mail.Money(int64(l.UnitPriceCents)), Amount: mail.Money(l.AmountCents)})
	}
	if err := b.Mailer.SendInvoice(ctx, out); err != nil {
		return err
	}
	return b.DB.MarkInvoiceMailed(ctx, id)
}
