package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// takeQuota holds one unit of the tenant's monthly quota for a check about to be created, in the
// creating transaction. The account's row is locked first, so concurrent creates of an account
// count one after the other: of 50 concurrent creates with 10 units left, exactly 10 succeed.
func takeQuota(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant) error {
	var limit int
	if err := tx.QueryRow(ctx, `SELECT monthly_check_quota FROM accounts WHERE id = $1 FOR NO KEY UPDATE`, t.AccountID).Scan(&limit); err != nil {
		return notFound(err)
	}
	start, end := bgcheck.PeriodOf(time.Now())
	used, err := quotaUsed(ctx, tx, t, start, end)
	if err != nil {
		return err
	}
	if used >= limit {
		return bgcheck.QuotaExceeded(limit, end)
	}
	return nil
}

// rowQuerier is what both a pool and a transaction offer for a single row.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// quotaUsed counts the tenant's checks of the period that hold quota: all but those canceled
// before their candidate consented.
func quotaUsed(ctx context.Context, q rowQuerier, t bgcheck.Tenant, start, end time.Time) (int, error) {
	var used int
	err := q.QueryRow(ctx, `SELECT count(*) FROM checks
		WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4
			AND NOT (status = 'canceled' AND authorized_at IS NULL)`, t.AccountID, t.Mode, start, end).Scan(&used)
	return used, err
}

// FindQuota returns the tenant's quota of the current period.
func (db *DB) FindQuota(ctx context.Context, t bgcheck.Tenant) (*bgcheck.Quota, error) {
	q := bgcheck.Quota{}
	q.PeriodStart, q.PeriodEnd = bgcheck.PeriodOf(time.Now())
	if err := db.pool.QueryRow(ctx, `SELECT monthly_check_quota FROM accounts WHERE id = $1`, t.AccountID).Scan(&q.Limit); err != nil {
		return nil, notFound(err)
	}
	used, err := quotaUsed(ctx, db.pool, t, q.PeriodStart, q.PeriodEnd)
	if err != nil {
		return nil, err
	}
	q.Used, q.Remaining = used, max(q.Limit-used, 0)
	return &q, nil
}

// SetQuota sets an account's monthly quota of checks (the operator's CLI).
func (db *DB) SetQuota(ctx context.Context, accountID string, limit int) error {
	tag, err := db.pool.Exec(ctx, `UPDATE accounts SET monthly_check_quota = $2 WHERE id = $1`, accountID, limit)
	if err == nil && tag.RowsAffected() == 0 {
		return bgcheck.ErrNotFound
	}
	return err
}

// recordUsage writes the usage record of a check whose candidate consented, in the consenting
// transaction; a second consent (after a suspension) writes nothing.
func recordUsage(ctx context.Context, tx pgx.Tx, checkID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO usage_records (id, account_id, mode, check_id, package, unit_price_cents)
		SELECT $2, account_id, mode, id, package, unit_price_cents FROM checks WHERE id = $1
		ON CONFLICT (check_id, kind) DO NOTHING`, checkID, bgcheck.NewID(bgcheck.PrefixUsageRecord))
	return err
}

const usageColumns = `id, check_id, mode, kind, package, unit_price_cents, created_at`

// Usage is a period's usage records (a page of them) and their totals by package.
type Usage struct {
	bgcheck.Page[*bgcheck.UsageRecord]
	PeriodStart time.Time            `json:"period_start"`
	PeriodEnd   time.Time            `json:"period_end"`
	Totals      []bgcheck.UsageTotal `json:"totals"`
	TotalCents  int64                `json:"total_cents"`
}

// ListUsage returns the tenant's usage records created in [from, to), newest first, a page at a
// time, with the totals of the whole range by package.
func (db *DB) ListUsage(ctx context.Context, t bgcheck.Tenant, from, to time.Time, p bgcheck.ListParams) (*Usage, error) {
	pg, err := page(ctx, db, p, func(u *bgcheck.UsageRecord) string { return u.ID }, `
		SELECT `+usageColumns+` FROM usage_records
		WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4 AND ($5 = '' OR id < $5)
		ORDER BY id DESC LIMIT $6`, t.AccountID, t.Mode, from, to)
	if err != nil {
		return nil, err
	}
	for _, u := range pg.Data {
		u.CheckID = bgcheck.CheckUUID(u.Check)
	}
	rows, err := db.pool.Query(ctx, `
		SELECT package, count(*)::int AS quantity, sum(unit_price_cents)::bigint AS amount_cents
		FROM usage_records WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4
		GROUP BY package ORDER BY package`, t.AccountID, t.Mode, from, to)
	if err != nil {
		return nil, err
	}
	totals, err := pgx.CollectRows(rows, pgx.RowToStructByPos[bgcheck.UsageTotal])
	if err != nil {
		return nil, err
	}
	out := &Usage{Page: pg, PeriodStart: from, PeriodEnd: to, Totals: totals}
	if out.Totals == nil {
		out.Totals = []bgcheck.UsageTotal{}
	}
	for _, tot := range totals {
		out.TotalCents += tot.AmountCents
	}
	return out, nil
}

// usageTotals sums the tenant's usage of [from, to) by package and price: an invoice's lines.
func (db *DB) usageTotals(ctx context.Context, t bgcheck.Tenant, from, to time.Time) ([]bgcheck.InvoiceLine, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT package, count(*)::int AS quantity, unit_price_cents, sum(unit_price_cents)::bigint AS amount_cents
		FROM usage_records WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4
		GROUP BY package, unit_price_cents ORDER BY package, unit_price_cents`, t.AccountID, t.Mode, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[bgcheck.InvoiceLine])
}

// DailyUsage counts the tenant's usage records per UTC day of [from, to), for the dashboard.
func (db *DB) DailyUsage(ctx context.Context, t bgcheck.Tenant, from, to time.Time) (map[string]int, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*)::int FROM usage_records
		WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4 GROUP BY 1`, t.AccountID, t.Mode, from, to)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var day string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&day, &n}, func() error { out[day] = n; return nil })
	return out, err
}

// AccountsWithUsage lists the accounts with live usage in [from, to): those to invoice.
func (db *DB) AccountsWithUsage(ctx context.Context, from, to time.Time) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT account_id FROM usage_records
		WHERE mode = 'live' AND created_at >= $1 AND created_at < $2 ORDER BY account_id`, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

const invoiceColumns = `id, account_id, number, period_start, period_end, lines, total_cents, currency, status, issued_at`

// IssueInvoice totals the account's live usage of the period starting at start into an invoice,
// once: a second call for the same period returns the invoice already issued. A period without
// live usage gets no invoice (nil).
func (db *DB) IssueInvoice(ctx context.Context, accountID string, start time.Time) (*bgcheck.Invoice, error) {
	start, end := bgcheck.PeriodOf(start)
	if inv, err := db.invoiceOfPeriod(ctx, accountID, start); err != bgcheck.ErrNotFound {
		return inv, err
	}
	lines, err := db.usageTotals(ctx, bgcheck.Tenant{AccountID: accountID, Mode: bgcheck.ModeLive}, start, end)
	if err != nil || len(lines) == 0 {
		return nil, err
	}
	var total int64
	for _, l := range lines {
		total += l.AmountCents
	}
	raw, err := json.Marshal(lines)
	if err != nil {
		return nil, err
	}
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		// The account's row orders the numbering of concurrent issues.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) + 1 FROM invoices WHERE account_id = $1`, accountID).Scan(&n); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO invoices (id, account_id, number, period_start, period_end, lines, total_cents)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (account_id, period_start) DO NOTHING`,
			bgcheck.NewID(bgcheck.PrefixInvoice), accountID, bgcheck.InvoiceNumber(start, n), start, end, raw, total)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.invoiceOfPeriod(ctx, accountID, start)
}

func (db *DB) invoiceOfPeriod(ctx context.Context, accountID string, start time.Time) (*bgcheck.Invoice, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+invoiceColumns+` FROM invoices WHERE account_id = $1 AND period_start = $2`, accountID, start)
	inv, err := collectOne[bgcheck.Invoice](rows, err)
	if err != nil {
		return nil, err
	}
	return inv.WithPeriod(), nil
}

// FindInvoice returns one of the account's invoices.
func (db *DB) FindInvoice(ctx context.Context, accountID, id string) (*bgcheck.Invoice, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+invoiceColumns+` FROM invoices WHERE id = $1 AND account_id = $2`, id, accountID)
	inv, err := collectOne[bgcheck.Invoice](rows, err)
	if err != nil {
		return nil, err
	}
	return inv.WithPeriod(), nil
}

// ListInvoices returns a page of the account's invoices, newest first.
func (db *DB) ListInvoices(ctx context.Context, accountID string, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Invoice], error) {
	pg, err := page(ctx, db, p, func(i *bgcheck.Invoice) string { return i.ID }, `
		SELECT `+invoiceColumns+` FROM invoices WHERE account_id = $1 AND ($2 = '' OR id < $2)
		ORDER BY id DESC LIMIT $3`, accountID)
	for _, inv := range pg.Data {
		inv.WithPeriod()
	}
	return pg, err
}

// InvoiceMail is what the invoice's e-mail needs, and whether it was sent.
type InvoiceMail struct {
	Invoice     *bgcheck.Invoice
	AccountName string
	AdminEmails []string
	Mailed      bool
}

// FindInvoiceMail loads an invoice for its e-mail to the account's admins.
func (db *DB) FindInvoiceMail(ctx context.Context, id string) (*InvoiceMail, error) {
	var m InvoiceMail
	var accountID string
	err := db.pool.QueryRow(ctx, `SELECT i.account_id, a.name, i.mailed_at IS NOT NULL,
			coalesce((SELECT array_agg(u.email ORDER BY u.email) FROM users u WHERE u.account_id = i.account_id AND u.role = 'admin'), '{}')
		FROM invoices i JOIN accounts a ON a.id = i.account_id WHERE i.id = $1`, id).Scan(&accountID, &m.AccountName, &m.Mailed, &m.AdminEmails)
	if err != nil {
		return nil, notFound(err)
	}
	if m.Invoice, err = db.FindInvoice(ctx, accountID, id); err != nil {
		return nil, err
	}
	return &m, nil
}

// MarkInvoiceMailed records that the invoice went to the admins, so a retry does not send it again.
func (db *DB) MarkInvoiceMailed(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE invoices SET mailed_at = coalesce(mailed_at, now()) WHERE id = $1`, id)
	return err
}
