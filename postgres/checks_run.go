package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// CheckRun is what a check's workflow and activities need to know about it.
type CheckRun struct {
	ID          string
	AccountID   string
	Mode        bgcheck.Mode
	CandidateID string
	Status      bgcheck.CheckStatus
	Email       string
	FirstName   string
	LastName    string
	DOB         string // YYYY-MM-DD, or ""
	Screenings  []string
	// InvitationExpiresAt is when the invitation lapses.
	InvitationExpiresAt time.Time
}

// Tenant is the check's account and mode.
func (r *CheckRun) Tenant() bgcheck.Tenant {
	return bgcheck.Tenant{AccountID: r.AccountID, Mode: r.Mode}
}

// FindCheckRun loads a check for its workflow, whatever its account.
func (db *DB) FindCheckRun(ctx context.Context, checkID string) (*CheckRun, error) {
	var r CheckRun
	var email, dob *string
	err := db.pool.QueryRow(ctx, `
		SELECT c.id, c.account_id, c.mode, c.candidate_id, c.status, cand.email, cand.first_name, cand.last_name,
			to_char(cand.dob, 'YYYY-MM-DD'), c.invitation_expires_at,
			ARRAY(SELECT type FROM check_screenings s WHERE s.check_id = c.id ORDER BY s.position)
		FROM checks c JOIN candidates cand ON cand.id = c.candidate_id WHERE c.id = $1`, checkID).
		Scan(&r.ID, &r.AccountID, &r.Mode, &r.CandidateID, &r.Status, &email, &r.FirstName, &r.LastName, &dob,
			&r.InvitationExpiresAt, &r.Screenings)
	if err != nil {
		return nil, notFound(err)
	}
	if email != nil {
		r.Email = *email
	}
	if dob != nil {
		r.DOB = *dob
	}
	return &r, nil
}

// CandidateDetailsOf unseals what the candidate of a check gave when consenting; a candidate
// who gave nothing yet is bgcheck.ErrNotFound.
func (db *DB) CandidateDetailsOf(ctx context.Context, candidateID string) (CandidateDetails, error) {
	var keyID string
	var sealed []byte
	err := db.pool.QueryRow(ctx, `SELECT key_id, sealed FROM candidate_details WHERE candidate_id = $1`, candidateID).
		Scan(&keyID, &sealed)
	if err != nil {
		return CandidateDetails{}, notFound(err)
	}
	return db.openDetails(candidateID, keyID, sealed)
}

// ScreeningUpdate is a provider's answer about one screening of a check.
type ScreeningUpdate struct {
	CheckID string
	Type    string
	Status  string
	Result  string // "" unless complete
	Records []byte // JSON array; nil means []
	Reason  string
}

// RecordScreening stores a screening's state, unless its check has finished (a late answer
// after a cancellation changes nothing). Recording the same answer twice is harmless.
func (db *DB) RecordScreening(ctx context.Context, u ScreeningUpdate) error {
	if u.Records == nil {
		u.Records = []byte("[]")
	}
	_, err := db.pool.Exec(ctx, `
		UPDATE check_screenings s SET status = $3, result = nullif($4, ''), records = $5, reason = nullif($6, ''),
			completed_at = CASE WHEN $3 IN ('complete', 'failed') THEN coalesce(s.completed_at, now()) END
		FROM checks c
		WHERE s.check_id = $1 AND s.type = $2 AND c.id = s.check_id AND c.status NOT IN ('complete', 'dispute', 'canceled', 'failed')`,
		u.CheckID, u.Type, u.Status, u.Result, u.Records, u.Reason)
	return err
}

// SuspendCheck marks a running check suspended: a screening waits for the candidate to correct
// their details (they authorize again). No event is defined for it (API.md §6's nine).
func (db *DB) SuspendCheck(ctx context.Context, checkID, reason string) error {
	_, err := db.pool.Exec(ctx, `UPDATE checks SET status = 'suspended', reason = $2, updated_at = now()
		WHERE id = $1 AND status = 'pending'`, checkID, reason)
	return err
}

// CompleteCheck finishes a check whose screenings are all complete: its assessment is consider
// when any screening found something, else clear; its report is written; and check.completed
// ({check_id, status, disposition}, as the spec says) and report.ready ({check_id, report_id,
// candidate_id}) are written in the same transaction, in that order. A check already finished is
// returned as it is, so a retried activity writes nothing twice.
func (db *DB) CompleteCheck(ctx context.Context, checkID string) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		var t bgcheck.Tenant
		var candidateID string
		var status bgcheck.CheckStatus
		err := tx.QueryRow(ctx, `SELECT account_id, mode, candidate_id, status FROM checks WHERE id = $1 FOR UPDATE`, checkID).
			Scan(&t.AccountID, &t.Mode, &candidateID, &status)
		if err != nil {
			return notFound(err)
		}
		if status.Finished() {
			return nil
		}
		var consider bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM check_screenings WHERE check_id = $1 AND result = 'consider')`,
			checkID).Scan(&consider); err != nil {
			return err
		}
		assessment := bgcheck.AssessmentClear
		if consider {
			assessment = bgcheck.AssessmentConsider
		}
		if _, err := tx.Exec(ctx, `UPDATE checks SET status = 'complete', assessment = $2, reason = NULL,
			completed_at = now(), updated_at = now() WHERE id = $1`, checkID, assessment); err != nil {
			return err
		}
		reportID := bgcheck.NewID(bgcheck.PrefixReport)
		if _, err := tx.Exec(ctx, `INSERT INTO reports (id, check_id, account_id, mode, candidate_id, assessment)
			VALUES ($1, $2, $3, $4, $5, $6)`, reportID, checkID, t.AccountID, t.Mode, candidateID, assessment); err != nil {
			return err
		}
		uuid := bgcheck.CheckUUID(checkID)
		if _, err := insertEvent(ctx, tx, t, bgcheck.EventCheckCompleted, map[string]any{
			"check_id": uuid, "status": bgcheck.CheckComplete, "disposition": assessment,
		}); err != nil {
			return err
		}
		_, err = insertEvent(ctx, tx, t, bgcheck.EventReportReady, map[string]any{
			"check_id": uuid, "report_id": reportID, "candidate_id": candidateID,
		})
		return err
	})
}

// FailCheck ends a check that has not finished with status (failed or canceled) and reason,
// writing check.failed; a check already finished is left as it is.
func (db *DB) FailCheck(ctx context.Context, checkID string, status bgcheck.CheckStatus, reason string) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		var t bgcheck.Tenant
		tag, err := tx.Exec(ctx, `UPDATE checks SET status = $2, reason = $3, updated_at = now(), signal_authorized = false
			WHERE id = $1 AND status NOT IN ('complete', 'dispute', 'canceled', 'failed')`, checkID, status, reason)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT account_id, mode FROM checks WHERE id = $1`, checkID).Scan(&t.AccountID, &t.Mode); err != nil {
			return err
		}
		return endCheck(ctx, tx, t, checkID, status, reason)
	})
}
