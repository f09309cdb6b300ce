package bgcheck

import (
	"fmt"
	"time"
)

// Prefixes of billing records' ids.
const (
	PrefixUsageRecord   = "use"
	PrefixInvoice       = "inv"
	PrefixPaymentMethod = "pm"
)

// PeriodOf returns the billing period t falls in: its calendar month in UTC, [start, end).
func PeriodOf(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// UsageRecord is one billable unit: a check whose candidate consented, at its package's price
// when the check was created (0 in test mode). Usage records are append-only and outlive the
// check.
type UsageRecord struct {
	ID             string    `json:"id" db:"id"`
	Check          string    `json:"check" db:"check_id"`
	CheckID        string    `json:"check_id" db:"-"`
	Mode           Mode      `json:"mode" db:"mode"`
	Kind           string    `json:"kind" db:"kind"`
	Package        string    `json:"package" db:"package"`
	UnitPriceCents int       `json:"unit_price_cents" db:"unit_price_cents"`
	CreatedAt      time.Time `json:"created_at" db:"created_at"`
}

// UsageTotal sums a period's usage records of one package.
type UsageTotal struct {
	Package     string `json:"package" db:"package"`
	Quantity    int    `json:"quantity" db:"quantity"`
	AmountCents int64  `json:"amount_cents" db:"amount_cents"`
}

// Quota is an account's monthly allowance of checks in one mode and what is left of it. Used
// counts the period's checks except those canceled before consent, which cost nothing; a check
// waiting for consent holds its unit.
type Quota struct {
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Limit       int       `json:"limit"`
	Used        int       `json:"used"`
	Remaining   int       `json:"remaining"`
}

// QuotaExceeded is the error of a check over the account's quota: it names the limit and when it
// resets.
func QuotaExceeded(limit int, resetsAt time.Time) *Error {
	return Errorf(CodeQuotaExceeded, "the monthly quota of %d checks is used up; it resets at %s",
		limit, resetsAt.UTC().Format(time.RFC3339))
}

// InvoiceStatus is where an invoice stands.
type InvoiceStatus string

// The statuses of an invoice.
const (
	InvoiceOpen InvoiceStatus = "open"
	InvoicePaid InvoiceStatus = "paid"
	InvoiceVoid InvoiceStatus = "void"
)

// InvoiceLine is one package's checks of the period at one price.
type InvoiceLine struct {
	Package        string `json:"package"`
	Quantity       int    `json:"quantity"`
	UnitPriceCents int    `json:"unit_price_cents"`
	AmountCents    int64  `json:"amount_cents"`
}

// Invoice bills an account for a period's live usage.
type Invoice struct {
	ID        string `json:"id" db:"id"`
	AccountID string `json:"-" db:"account_id"`
	Number    string `json:"number" db:"number"`
	// Period names the month billed, YYYY-MM (UTC).
	Period      string        `json:"period" db:"-"`
	PeriodStart time.Time     `json:"period_start" db:"period_start"`
	PeriodEnd   time.Time     `json:"period_end" db:"period_end"`
	Lines       []InvoiceLine `json:"lines" db:"lines"`
	TotalCents  int64         `json:"total_cents" db:"total_cents"`
	Currency    string        `json:"currency" db:"currency"`
	Status      InvoiceStatus `json:"status" db:"status"`
	IssuedAt    time.Time     `json:"issued_at" db:"issued_at"`
}

// WithPeriod fills in Period from PeriodStart.
func (i *Invoice) WithPeriod() *Invoice {
	i.Period = i.PeriodStart.UTC().Format("2006-01")
	return i
}

// InvoiceNumber is the number of an account's n-th invoice, issued for the period starting at
// start: the period and a sequence, e.g. 2026-11-0003.
func InvoiceNumber(start time.Time, n int) string {
	return fmt.Sprintf("%s-%04d", start.UTC().Format("2006-01"), n)
}

// PaymentMethod is a reference to a payment method a payment processor holds: bgcheck never
// holds card numbers, only the processor's reference and what a person needs to recognise it.
type PaymentMethod struct {
	ID           string    `json:"id" db:"id"`
	AccountID    string    `json:"-" db:"account_id"`
	Mode         Mode      `json:"mode" db:"mode"`
	Processor    string    `json:"processor" db:"processor"`
	ProcessorRef string    `json:"processor_ref" db:"processor_ref"`
	Brand        string    `json:"brand" db:"brand"`
	Last4        string    `json:"last4" db:"last4"`
	ExpMonth     int       `json:"exp_month" db:"exp_month"`
	ExpYear      int       `json:"exp_year" db:"exp_year"`
	Default      bool      `json:"default" db:"is_default"`
	CreatedAt    time.Time `json:"created_at" db:"created_at"`
}
