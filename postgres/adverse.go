package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const adverseColumns = `id, check_id, account_id, mode, candidate_id, status, reasons, waiting_days, notice_sent_at,
	finalize_at, on_hold, finalized_at, canceled_at, created_at`

// ErrAdverseActionOpen refuses a second adverse action while one is pending for the check.
var ErrAdverseActionOpen = bgcheck.Errorf(bgcheck.CodeAdverseActionOpen,
	"this check already has an adverse action in its waiting period; cancel it first")

// CreateAdverseAction starts an adverse action on one of the tenant's checks, which must be
// complete with the assessment consider: the row and adverse_action.created in one transaction,
// and the dispatcher woken to start its workflow (which sends the pre-adverse notice). The final
// notice is due waitingDays business days from now; 0 means the account's default.
func (db *DB) CreateAdverseAction(ctx context.Context, t bgcheck.Tenant, checkID string, reasons []string, waitingDays int) (*bgcheck.AdverseAction, error) {
	id := bgcheck.NewID(bgcheck.PrefixAdverseAction)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var status bgcheck.CheckStatus
		var assessment *bgcheck.Assessment
		var candidateID string
		err := tx.QueryRow(ctx, `SELECT status, assessment, candidate_id FROM checks WHERE id = $1 AND account_id = $2 AND mode = $3 FOR UPDATE`,
			checkID, t.AccountID, t.Mode).Scan(&status, &assessment, &candidateID)
		if err != nil {
			return notFound(err)
		}
		if status != bgcheck.CheckComplete || assessment == nil || *assessment != bgcheck.AssessmentConsider {
			return bgcheck.Errorf(bgcheck.CodeCheckNotAdverse,
				"an adverse action needs a complete check whose assessment is consider (this one is %s)", status)
		}
		if waitingDays == 0 {
			if err := tx.QueryRow(ctx, `SELECT adverse_waiting_days FROM accounts WHERE id = $1`, t.AccountID).Scan(&waitingDays); err != nil {
				return err
			}
		}
		finalizeAt := bgcheck.AddBusinessDays(time.Now(), waitingDays)
		_, err = tx.Exec(ctx, `INSERT INTO adverse_actions (id, account_id, mode, check_id, candidate_id, status, reasons, waiting_days, finalize_at)
			VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8)`, id, t.AccountID, t.Mode, checkID, candidateID, reasons, waitingDays, finalizeAt)
		if isUniqueViolation(err, "adverse_actions_one_open_idx") {
			return ErrAdverseActionOpen
		}
		if err != nil {
			return err
		}
		if _, err := insertEvent(ctx, tx, t, bgcheck.EventAdverseActionCreated, map[string]any{
			"check_id": bgcheck.CheckUUID(checkID), "adverse_action_id": id, "status": bgcheck.AdverseActionPending,
			"finalize_at": finalizeAt.UTC().Truncate(time.Second),
		}); err != nil {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindAdverseAction(ctx, t.AccountID, t.Mode, id)
}

func withCheckUUID(a *bgcheck.AdverseAction) *bgcheck.AdverseAction {
	a.CheckID = bgcheck.CheckUUID(a.Check)
	return a
}

// FindAdverseAction returns one of the account's adverse actions of mode, or of either mode when
// mode is "" (the dashboard).
func (db *DB) FindAdverseAction(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.AdverseAction, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+adverseColumns+` FROM adverse_actions WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3)`,
		id, accountID, mode)
	a, err := collectOne[bgcheck.AdverseAction](rows, err)
	if err != nil {
		return nil, err
	}
	return withCheckUUID(a), nil
}

// ListAdverseActions returns a page of the account's adverse actions of mode ("" for both),
// newest first; checkID "" means every check's.
func (db *DB) ListAdverseActions(ctx context.Context, accountID string, mode bgcheck.Mode, checkID string, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.AdverseAction], error) {
	pg, err := page(ctx, db, p, func(a *bgcheck.AdverseAction) string { return a.ID }, `
		SELECT `+adverseColumns+` FROM adverse_actions
		WHERE account_id = $1 AND ($2 = '' OR mode = $2) AND ($3 = '' OR check_id = $3) AND ($4 = '' OR id < $4)
		ORDER BY id DESC LIMIT $5`, accountID, mode, checkID)
	for _, a := range pg.Data {
		withCheckUUID(a)
	}
	return pg, err
}

// CancelAdverseAction withdraws a pending adverse action of the account's (of mode, or either
// when mode is ""): no final notice will be sent. One
// already finalized or canceled is bgcheck.CodeAdverseActionClosed.
func (db *DB) CancelAdverseAction(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.AdverseAction, error) {
	tag, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET status = 'canceled', canceled_at = now(), updated_at = now(),
			cancel_workflow = (workflow_started_at IS NOT NULL), on_hold = false, held_at = NULL, hold_signal_pending = false
		WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3) AND status = 'pending'`, id, accountID, mode)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		a, err := db.FindAdverseAction(ctx, accountID, mode, id)
		if err != nil {
			return nil, err
		}
		return nil, bgcheck.Errorf(bgcheck.CodeAdverseActionClosed, "this adverse action is already %s", a.Status)
	}
	db.announcer.announce(false)
	return db.FindAdverseAction(ctx, accountID, mode, id)
}

// AdverseRun is what an adverse action's workflow and activities need.
type AdverseRun struct {
	ID          string
	CheckID     string
	Tenant      bgcheck.Tenant
	Status      bgcheck.AdverseActionStatus
	Reasons     []string
	FinalizeAt  time.Time
	NoticeSent  bool
	FinalSent   bool
	OnHold      bool
	Email       string
	Name        string
	CandidateID string
}

// FindAdverseRun loads an adverse action for its workflow, whatever its account.
func (db *DB) FindAdverseRun(ctx context.Context, id string) (*AdverseRun, error) {
	var r AdverseRun
	var email *string
	var first, last string
	err := db.pool.QueryRow(ctx, `
		SELECT a.id, a.check_id, a.account_id, a.mode, a.status, a.reasons, a.finalize_at, a.notice_sent_at IS NOT NULL,
			a.final_notice_sent_at IS NOT NULL, a.on_hold, c.email, c.first_name, c.last_name, a.candidate_id
		FROM adverse_actions a JOIN candidates c ON c.id = a.candidate_id WHERE a.id = $1`, id).
		Scan(&r.ID, &r.CheckID, &r.Tenant.AccountID, &r.Tenant.Mode, &r.Status, &r.Reasons, &r.FinalizeAt, &r.NoticeSent,
			&r.FinalSent, &r.OnHold, &email, &first, &last, &r.CandidateID)
	if err != nil {
		return nil, notFound(err)
	}
	if email != nil {
		r.Email = *email
	}
	r.Name = first + " " + last
	return &r, nil
}

// MarkPreAdverseNoticeSent records that the pre-adverse notice went out, so a retried activity
// does not send it again.
func (db *DB) MarkPreAdverseNoticeSent(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET notice_sent_at = coalesce(notice_sent_at, now()), updated_at = now() WHERE id = $1`, id)
	return err
}

// MarkFinalNoticeSent records that the final notice went out.
func (db *DB) MarkFinalNoticeSent(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET final_notice_sent_at = coalesce(final_notice_sent_at, now()) WHERE id = $1`, id)
	return err
}

// FinalizeAdverseAction marks a pending adverse action finalized and writes
// adverse_action.finalized, in one transaction, unless a dispute holds it: then it reports held
// and changes nothing. The database decides, so a hold whose signal has not reached the workflow
// yet still stops the final notice. Anything not pending is left as it is (idempotent).
func (db *DB) FinalizeAdverseAction(ctx context.Context, id string) (held bool, err error) {
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var t bgcheck.Tenant
		var checkID string
		var status bgcheck.AdverseActionStatus
		if err := tx.QueryRow(ctx, `SELECT account_id, mode, check_id, status, on_hold FROM adverse_actions WHERE id = $1 FOR UPDATE`, id).
			Scan(&t.AccountID, &t.Mode, &checkID, &status, &held); err != nil {
			return notFound(err)
		}
		if status != bgcheck.AdverseActionPending || held {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE adverse_actions SET status = 'finalized', finalized_at = now(), updated_at = now()
			WHERE id = $1`, id); err != nil {
			return err
		}
		_, err := insertEvent(ctx, tx, t, bgcheck.EventAdverseActionFinalized, map[string]any{
			"check_id": bgcheck.CheckUUID(checkID), "adverse_action_id": id, "status": bgcheck.AdverseActionFinalized,
		})
		return err
	})
	return held, err
}

// AdverseStart is an adverse action whose workflow the dispatcher has to start.
type AdverseStart struct {
	ID          string
	AccountID   string
	CheckID     string
	CandidateID string
	FinalizeAt  time.Time
	OnHold      bool // a dispute of the check is open: the workflow starts held
	HoldVersion int
}

// ClaimAdverseStarts leases up to limit pending adverse actions whose workflow has not started.
func (db *DB) ClaimAdverseStarts(ctx context.Context, limit int, lease time.Duration) ([]AdverseStart, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE adverse_actions a SET dispatch_lease_until = now() + $2 * interval '1 millisecond'
		FROM (
			SELECT id FROM adverse_actions
			WHERE workflow_started_at IS NULL AND status = 'pending'
				AND (dispatch_lease_until IS NULL OR dispatch_lease_until < now())
			ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
		) claimed
		WHERE a.id = claimed.id
		RETURNING a.id, a.account_id, a.check_id, a.candidate_id, a.finalize_at, a.on_hold, a.hold_version`, limit, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[AdverseStart])
}

// MarkAdverseStarted records that the adverse actions' workflows exist; failed ones are released.
func (db *DB) MarkAdverseStarted(ctx context.Context, started, failed []string) error {
	if len(started) > 0 {
		if _, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET workflow_started_at = now(), dispatch_lease_until = NULL
			WHERE id = ANY($1)`, started); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		_, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET dispatch_lease_until = NULL WHERE id = ANY($1)`, failed)
		return err
	}
	return nil
}

// AdverseCancels returns up to limit adverse actions whose workflow is still to be canceled.
func (db *DB) AdverseCancels(ctx context.Context, limit int) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM adverse_actions WHERE cancel_workflow ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// AdverseCanceled records that an adverse action's workflow was canceled (or is gone).
func (db *DB) AdverseCanceled(ctx context.Context, id string) error {
	_, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET cancel_workflow = false WHERE id = $1`, id)
	return err
}

// AdverseHold is what an adverse action's workflow is to be told: whether a dispute holds it,
// the end of its waiting period, and the version of that state, which rises with every change.
type AdverseHold struct {
	ID         string
	OnHold     bool
	FinalizeAt time.Time
	Version    int
}

// AdverseHoldSignals returns up to limit adverse actions whose workflow, started, has still to be
// told that a dispute holds or released it.
func (db *DB) AdverseHoldSignals(ctx context.Context, limit int) ([]AdverseHold, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, on_hold, finalize_at, hold_version FROM adverse_actions
		WHERE hold_signal_pending AND workflow_started_at IS NOT NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[AdverseHold])
}

// AdverseHoldSignaled records that the workflow was told h. A hold that changed meanwhile (a
// newer version) stays pending, so the workflow hears the newer one too; the workflow ignores
// versions older than one it has seen, so signals crossing between dispatchers do no harm.
func (db *DB) AdverseHoldSignaled(ctx context.Context, h AdverseHold) error {
	_, err := db.pool.Exec(ctx, `UPDATE adverse_actions SET hold_signal_pending = false WHERE id = $1 AND hold_version = $2`, h.ID, h.Version)
	return err
}

// AdverseWaitingDays returns the account's default waiting period of an adverse action, in
// business days.
func (db *DB) AdverseWaitingDays(ctx context.Context, accountID string) (int, error) {
	var days int
	err := db.pool.QueryRow(ctx, `SELECT adverse_waiting_days FROM accounts WHERE id = $1`, accountID).Scan(&days)
	return days, notFound(err)
}

// SetAdverseWaitingDays sets the account's default waiting period (5 to 30 business days); it
// applies to adverse actions created after.
func (db *DB) SetAdverseWaitingDays(ctx context.Context, accountID string, days int) error {
	_, err := db.pool.Exec(ctx, `UPDATE accounts SET adverse_waiting_days = $2 WHERE id = $1`, accountID, days)
	return err
}
