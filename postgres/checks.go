package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// checkColumns are a check as the API shows it; FROM checks c LEFT JOIN reports r.
const checkColumns = `c.id, c.account_id, c.mode, c.candidate_id, c.package, c.status, c.assessment, c.reason,
	r.id AS report_id, c.created_at, c.updated_at, c.completed_at, c.invitation_expires_at`

const checkFrom = ` FROM checks c LEFT JOIN reports r ON r.check_id = c.id `

// NewCheck is a check to create.
type NewCheck struct {
	CandidateID string
	Package     string
	Screenings  []string
	// InvitationTTL is how long the candidate has to consent.
	InvitationTTL time.Duration
	// UnitPriceCents is what the check costs once the candidate consents (0 in test mode).
	UnitPriceCents int
}

// ErrCheckFinished refuses to change a check that has completed, failed or been canceled.
var ErrCheckFinished = bgcheck.Errorf(bgcheck.CodeCheckFinished, "this check has already finished")

// CreateCheck stores a check waiting for the candidate's consent, with its screenings and its
// check.created event, in one transaction, and wakes the dispatcher to start its workflow. The
// candidate must be the tenant's (else bgcheck.ErrNotFound) and have an e-mail address, where
// the invitation goes; the account must have quota left this month (else CodeQuotaExceeded).
func (db *DB) CreateCheck(ctx context.Context, t bgcheck.Tenant, n NewCheck) (*bgcheck.Check, error) {
	var id string
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var email *string
		err := tx.QueryRow(ctx, `SELECT email FROM candidates WHERE id = $1 AND account_id = $2 AND mode = $3`,
			n.CandidateID, t.AccountID, t.Mode).Scan(&email)
		if err != nil {
			return notFound(err)
		}
		if email == nil || *email == "" {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "candidate_id",
				Message: "the candidate has no e-mail address to send the invitation to"})
		}
		if err := takeQuota(ctx, tx, t); err != nil {
			return err
		}
		id = bgcheck.NewID(bgcheck.PrefixCheck)
		if _, err := tx.Exec(ctx, `INSERT INTO checks (id, account_id, mode, candidate_id, package, status, invitation_expires_at, unit_price_cents)
			VALUES ($1, $2, $3, $4, $5, 'invitation_pending', now() + $6 * interval '1 millisecond', $7)`,
			id, t.AccountID, t.Mode, n.CandidateID, n.Package, n.InvitationTTL.Milliseconds(), n.UnitPriceCents); err != nil {
			return err
		}
		for i, s := range n.Screenings {
			if _, err := tx.Exec(ctx, `INSERT INTO check_screenings (check_id, position, type) VALUES ($1, $2, $3)`, id, i, s); err != nil {
				return err
			}
		}
		if _, err := insertEvent(ctx, tx, t, bgcheck.EventCheckCreated, map[string]any{
			"check_id": bgcheck.CheckUUID(id), "status": bgcheck.CheckInvitationPending,
			"candidate_id": n.CandidateID, "package": n.Package,
		}); err != nil {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindCheck(ctx, t, id)
}

// FindCheck returns one of the tenant's checks with its screenings.
func (db *DB) FindCheck(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Check, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+checkColumns+checkFrom+`WHERE c.id = $1 AND c.account_id = $2 AND c.mode = $3`,
		id, t.AccountID, t.Mode)
	c, err := collectOne[bgcheck.Check](rows, err)
	if err != nil {
		return nil, err
	}
	return c, db.withScreenings(ctx, []*bgcheck.Check{c})
}

// CheckFilter narrows ListChecks; "" means any.
type CheckFilter struct {
	Status     bgcheck.CheckStatus
	Assessment bgcheck.Assessment
}

// ListChecks returns a page of the tenant's checks, newest first, with their screenings.
func (db *DB) ListChecks(ctx context.Context, t bgcheck.Tenant, f CheckFilter, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Check], error) {
	pg, err := page(ctx, db, p, func(c *bgcheck.Check) string { return c.ID }, `
		SELECT `+checkColumns+checkFrom+`
		WHERE c.account_id = $1 AND c.mode = $2 AND ($3 = '' OR c.status = $3) AND ($4 = '' OR c.assessment = $4)
			AND ($5 = '' OR c.id < $5)
		ORDER BY c.id DESC LIMIT $6`, t.AccountID, t.Mode, f.Status, f.Assessment)
	if err != nil {
		return pg, err
	}
	return pg, db.withScreenings(ctx, pg.Data)
}

// withScreenings fills in the checks' screenings (in package order) and their UUIDs.
func (db *DB) withScreenings(ctx context.Context, checks []*bgcheck.Check) error {
	if len(checks) == 0 {
		return nil
	}
	ids := make([]string, len(checks))
	byID := make(map[string]*bgcheck.Check, len(checks))
	for i, c := range checks {
		ids[i], byID[c.ID] = c.ID, c
		c.CheckID = bgcheck.CheckUUID(c.ID)
		c.Screenings = []bgcheck.CheckScreening{}
	}
	rows, err := db.pool.Query(ctx, `SELECT check_id, type, status, result, records, reason, completed_at
		FROM check_screenings WHERE check_id = ANY($1) ORDER BY check_id, position`, ids)
	if err != nil {
		return err
	}
	var checkID string
	var s bgcheck.CheckScreening
	_, err = pgx.ForEachRow(rows, []any{&checkID, &s.Type, &s.Status, &s.Result, &s.Records, &s.Reason, &s.CompletedAt}, func() error {
		byID[checkID].Screenings = append(byID[checkID].Screenings, s)
		return nil
	})
	return err
}

// CancelCheck cancels one of the tenant's checks that has not finished: its pending screenings
// stop, check.failed is written with status canceled (API.md §10), and, if its workflow runs,
// the dispatcher is asked to cancel it. A finished check is ErrCheckFinished.
func (db *DB) CancelCheck(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Check, error) {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE checks SET status = 'canceled', reason = $4, updated_at = now(),
				cancel_workflow = (workflow_started_at IS NOT NULL), signal_authorized = false
			WHERE id = $1 AND account_id = $2 AND mode = $3 AND status NOT IN ('complete', 'dispute', 'canceled', 'failed')`,
			id, t.AccountID, t.Mode, bgcheck.ReasonCanceledByCustomer)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checks WHERE id = $1 AND account_id = $2 AND mode = $3)`,
				id, t.AccountID, t.Mode).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return ErrCheckFinished
			}
			return bgcheck.ErrNotFound
		}
		return endCheck(ctx, tx, t, id, bgcheck.CheckCanceled, bgcheck.ReasonCanceledByCustomer)
	})
	if err != nil {
		return nil, err
	}
	return db.FindCheck(ctx, t, id)
}

// endCheck does what every end short of completion does, in the caller's transaction: the
// screenings still open are canceled and check.failed is written with the status and reason.
func endCheck(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, id string, status bgcheck.CheckStatus, reason string) error {
	if _, err := tx.Exec(ctx, `UPDATE check_screenings SET status = 'canceled'
		WHERE check_id = $1 AND status IN ('pending', 'suspended')`, id); err != nil {
		return err
	}
	if _, err := insertEvent(ctx, tx, t, bgcheck.EventCheckFailed, map[string]any{
		"check_id": bgcheck.CheckUUID(id), "status": status, "reason": reason,
	}); err != nil {
		return err
	}
	err := announceOutbox(ctx, tx)
	return err
}

// FindReport returns the report of one of the tenant's checks; a check without one (not
// complete) is bgcheck.ErrNotFound.
func (db *DB) FindReport(ctx context.Context, t bgcheck.Tenant, checkID string) (*bgcheck.Report, error) {
	rows, err := db.pool.Query(ctx, `SELECT r.id, r.check_id, r.account_id, r.mode, r.candidate_id, c.package, r.assessment, r.created_at, r.version, r.revised_at
		FROM reports r JOIN checks c ON c.id = r.check_id WHERE r.check_id = $1 AND r.account_id = $2 AND r.mode = $3`,
		checkID, t.AccountID, t.Mode)
	r, err := collectOne[bgcheck.Report](rows, err)
	if err != nil {
		return nil, err
	}
	return r, db.withSections(ctx, []*bgcheck.Report{r})
}

// withSections fills in the reports' screenings and their checks' UUIDs.
func (db *DB) withSections(ctx context.Context, reports []*bgcheck.Report) error {
	for _, r := range reports {
		r.CheckID = bgcheck.CheckUUID(r.Check)
		rows, err := db.pool.Query(ctx, `SELECT type, status, result, records FROM check_screenings
			WHERE check_id = $1 ORDER BY position`, r.Check)
		if err != nil {
			return err
		}
		var sec bgcheck.ReportSection
		var records []byte
		r.Screenings = []bgcheck.ReportSection{}
		if _, err := pgx.ForEachRow(rows, []any{&sec.Type, &sec.Status, &sec.Result, &records}, func() error {
			sec.Records = append([]byte(nil), records...)
			r.Screenings = append(r.Screenings, sec)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// CheckStart is a check whose workflow the dispatcher has to start.
type CheckStart struct {
	ID          string
	AccountID   string
	Mode        bgcheck.Mode
	CandidateID string
}

// ClaimCheckStarts leases up to limit checks whose workflow has not been started, as
// ClaimDispatches does for deliveries. Finished checks are never started.
func (db *DB) ClaimCheckStarts(ctx context.Context, limit int, lease time.Duration) ([]CheckStart, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE checks c SET dispatch_lease_until = now() + $2 * interval '1 millisecond'
		FROM (
			SELECT id FROM checks
			WHERE workflow_started_at IS NULL AND status IN ('invitation_pending', 'pending', 'suspended')
				AND (dispatch_lease_until IS NULL OR dispatch_lease_until < now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		) claimed
		WHERE c.id = claimed.id
		RETURNING c.id, c.account_id, c.mode, c.candidate_id`, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[CheckStart])
}

// MarkChecksStarted records that the checks' workflows exist.
func (db *DB) MarkChecksStarted(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE checks SET workflow_started_at = now(), dispatch_lease_until = NULL
		WHERE id = ANY($1) AND workflow_started_at IS NULL`, ids)
	return err
}

// ReleaseCheckStarts ends leases whose starts failed, so the next round tries again.
func (db *DB) ReleaseCheckStarts(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.pool.Exec(ctx, `UPDATE checks SET dispatch_lease_until = NULL WHERE id = ANY($1)`, ids)
	return err
}

// CheckSignal is what a started check's workflow has yet to be told: the candidate consented
// (Authorized), or the check was canceled (Cancel).
type CheckSignal struct {
	ID         string
	Authorized bool
	Cancel     bool
}

// CheckSignals returns up to limit started checks with something to tell their workflow.
func (db *DB) CheckSignals(ctx context.Context, limit int) ([]CheckSignal, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, signal_authorized, cancel_workflow FROM checks
		WHERE (signal_authorized OR cancel_workflow) AND workflow_started_at IS NOT NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[CheckSignal])
}

// CheckSignaled records that the workflow was told what s says.
func (db *DB) CheckSignaled(ctx context.Context, s CheckSignal) error {
	_, err := db.pool.Exec(ctx, `UPDATE checks SET
		signal_authorized = signal_authorized AND NOT $2, cancel_workflow = cancel_workflow AND NOT $3
		WHERE id = $1`, s.ID, s.Authorized, s.Cancel)
	return err
}

// ListAccountChecks is ListChecks for an admin: the account's checks of both modes, or of mode
// when it is not "".
func (db *DB) ListAccountChecks(ctx context.Context, accountID string, mode bgcheck.Mode, f CheckFilter, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Check], error) {
	pg, err := page(ctx, db, p, func(c *bgcheck.Check) string { return c.ID }, `
		SELECT `+checkColumns+checkFrom+`
		WHERE c.account_id = $1 AND ($2 = '' OR c.mode = $2) AND ($3 = '' OR c.status = $3) AND ($4 = '' OR c.assessment = $4)
			AND ($5 = '' OR c.id < $5)
		ORDER BY c.id DESC LIMIT $6`, accountID, mode, f.Status, f.Assessment)
	if err != nil {
		return pg, err
	}
	return pg, db.withScreenings(ctx, pg.Data)
}

// FindAccountCheck is FindCheck for an admin: a check of the account in either mode.
func (db *DB) FindAccountCheck(ctx context.Context, accountID, id string) (*bgcheck.Check, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+checkColumns+checkFrom+`WHERE c.id = $1 AND c.account_id = $2`, id, accountID)
	c, err := collectOne[bgcheck.Check](rows, err)
	if err != nil {
		return nil, err
	}
	return c, db.withScreenings(ctx, []*bgcheck.Check{c})
}

// CountAccountChecks counts the account's checks of both modes.
func (db *DB) CountAccountChecks(ctx context.Context, accountID string) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM checks WHERE account_id = $1`, accountID).Scan(&n)
	return n, err
}
