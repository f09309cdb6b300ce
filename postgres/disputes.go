package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const disputeColumns = `id, check_id, account_id, mode, candidate_id, screening, reason, status, filed_at, due_at,
	resolution, note, resolved_by, resolved_at`

func withDisputeUUID(d *bgcheck.Dispute) *bgcheck.Dispute {
	d.CheckID = bgcheck.CheckUUID(d.Check)
	return d
}

// FileDispute records a candidate's dispute of one screening of their report: the dispute and
// dispute.filed in one transaction, the check moved to status dispute, its adverse action in
// the waiting period put on hold, and the dispatcher woken to start the DisputeWorkflow (the
// 30-day deadline) and tell the adverse action's workflow. A check that is not the consumer's is
// bgcheck.ErrNotFound; one without a report is CodeReportNotReady; a screening the check does not
// have is a validation error; a screening already under dispute is CodeDisputeOpen.
func (db *DB) FileDispute(ctx context.Context, userID, checkID, screening, reason string) (*bgcheck.Dispute, error) {
	id := bgcheck.NewID(bgcheck.PrefixDispute)
	var t bgcheck.Tenant
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var status bgcheck.CheckStatus
		var candidateID string
		err := tx.QueryRow(ctx, `SELECT c.account_id, c.mode, c.status, c.candidate_id FROM checks c`+consumerChecksWhere+
			`AND c.id = $2 FOR UPDATE`, userID, checkID).Scan(&t.AccountID, &t.Mode, &status, &candidateID)
		if err != nil {
			return notFound(err)
		}
		if status != bgcheck.CheckComplete && status != bgcheck.CheckDispute {
			return bgcheck.Errorf(bgcheck.CodeReportNotReady, "this check has no report to dispute yet (it is %s)", status)
		}
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM check_screenings WHERE check_id = $1 AND type = $2)`,
			checkID, screening).Scan(&found); err != nil {
			return err
		}
		if !found {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "screening", Message: "is not a screening of this report"})
		}
		var dueAt time.Time
		err = tx.QueryRow(ctx, `INSERT INTO disputes (id, account_id, mode, check_id, candidate_id, screening, reason, status, due_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'open', now() + $8 * interval '1 second') RETURNING due_at`,
			id, t.AccountID, t.Mode, checkID, candidateID, screening, reason, bgcheck.DisputePeriod.Seconds()).Scan(&dueAt)
		if isUniqueViolation(err, "disputes_one_open_idx") {
			return bgcheck.Errorf(bgcheck.CodeDisputeOpen, "the %s screening of this report is already under dispute", screening)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE checks SET status = 'dispute', updated_at = now() WHERE id = $1`, checkID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE adverse_actions SET on_hold = true, held_at = now(), hold_version = hold_version + 1,
				hold_signal_pending = true, updated_at = now()
			WHERE check_id = $1 AND status = 'pending' AND NOT on_hold`, checkID); err != nil {
			return err
		}
		if _, err := insertEvent(ctx, tx, t, bgcheck.EventDisputeFiled, map[string]any{
			"check_id": bgcheck.CheckUUID(checkID), "dispute_id": id, "status": bgcheck.DisputeOpen,
			"screening": screening, "due_at": dueAt.UTC().Truncate(time.Second),
		}); err != nil {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindDispute(ctx, t.AccountID, t.Mode, id)
}

// FindDispute returns one of the account's disputes, of mode, or of either mode when mode is "".
func (db *DB) FindDispute(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.Dispute, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+disputeColumns+` FROM disputes WHERE id = $1 AND account_id = $2 AND ($3 = '' OR mode = $3)`,
		id, accountID, mode)
	d, err := collectOne[bgcheck.Dispute](rows, err)
	if err != nil {
		return nil, err
	}
	return withDisputeUUID(d), nil
}

// DisputeFilter narrows a list of disputes; empty fields match everything.
type DisputeFilter struct {
	Mode    bgcheck.Mode
	CheckID string
	Status  bgcheck.DisputeStatus
}

// ListDisputes returns a page of the account's disputes, newest first.
func (db *DB) ListDisputes(ctx context.Context, accountID string, f DisputeFilter, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Dispute], error) {
	pg, err := page(ctx, db, p, func(d *bgcheck.Dispute) string { return d.ID }, `
		SELECT `+disputeColumns+` FROM disputes
		WHERE account_id = $1 AND ($2 = '' OR mode = $2) AND ($3 = '' OR check_id = $3) AND ($4 = '' OR status = $4)
			AND ($5 = '' OR id < $5)
		ORDER BY id DESC LIMIT $6`, accountID, f.Mode, f.CheckID, f.Status)
	for _, d := range pg.Data {
		withDisputeUUID(d)
	}
	return pg, err
}

// ConsumerDisputes returns the disputes of every candidate the consumer user is, newest first;
// checkID, when not "", narrows them to one check.
func (db *DB) ConsumerDisputes(ctx context.Context, userID, checkID string) ([]*bgcheck.Dispute, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+disputeColumns+` FROM disputes c`+consumerChecksWhere+
		`AND ($2 = '' OR c.check_id = $2) ORDER BY c.id DESC LIMIT 100`, userID, checkID)
	if err != nil {
		return nil, err
	}
	disputes, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[bgcheck.Dispute])
	for _, d := range disputes {
		withDisputeUUID(d)
	}
	return disputes, err
}

// ConsumerDispute returns one dispute of a candidate the consumer user is; any other is
// bgcheck.ErrNotFound.
func (db *DB) ConsumerDispute(ctx context.Context, userID, id string) (*bgcheck.Dispute, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+disputeColumns+` FROM disputes c`+consumerChecksWhere+`AND c.id = $2`, userID, id)
	d, err := collectOne[bgcheck.Dispute](rows, err)
	if err != nil {
		return nil, err
	}
	return withDisputeUUID(d), nil
}

// DisputeResolution is the outcome of a reinvestigation.
type DisputeResolution struct {
	Resolution bgcheck.Resolution
	Note       string
	By         string // one of the bgcheck.ResolvedBy… values
}

// ResolveDispute settles an open dispute of the account's (of any account when accountID is ""),
// in one transaction:
//   - the dispute resolved, dispute.resolved written, and its workflow to be signaled;
//   - for a correction or a deletion, the disputed screening's records removed (it is clear), the
//     report's version raised and report.ready written, and, if the check's assessment changed,
//     check.completed again with the new disposition;
//   - when no other dispute of the check is open, the check back to complete and its adverse
//     action released, or canceled if the assessment is now clear: its reasons no longer stand.
//
// With testOnly a live-mode dispute is CodeTestModeOnly: the agency resolves those (the CLI). A
// dispute already resolved is CodeDisputeResolved, except for the deadline, which finds nothing
// left to do.
func (db *DB) ResolveDispute(ctx context.Context, accountID, id string, r DisputeResolution, testOnly bool) (*bgcheck.Dispute, error) {
	var t bgcheck.Tenant
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var checkID, screening string
		var status bgcheck.DisputeStatus
		err := tx.QueryRow(ctx, `SELECT account_id, mode, check_id, screening, status FROM disputes
			WHERE id = $1 AND ($2 = '' OR account_id = $2) FOR UPDATE`, id, accountID).
			Scan(&t.AccountID, &t.Mode, &checkID, &screening, &status)
		if err != nil {
			return notFound(err)
		}
		if testOnly && t.Mode == bgcheck.ModeLive {
			return bgcheck.Errorf(bgcheck.CodeTestModeOnly,
				"live-mode disputes are resolved by the consumer reporting agency (bgcheckctl disputes resolve)")
		}
		if status == bgcheck.DisputeResolved {
			if r.By == bgcheck.ResolvedByDeadline {
				return nil
			}
			return bgcheck.Errorf(bgcheck.CodeDisputeResolved, "this dispute is already resolved")
		}
		// The check's row is locked before anything of it changes, as FileDispute locks it.
		var assessment bgcheck.Assessment
		if err := tx.QueryRow(ctx, `SELECT assessment FROM checks WHERE id = $1 FOR UPDATE`, checkID).Scan(&assessment); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE disputes SET status = 'resolved', resolution = $2, note = nullif($3, ''), resolved_by = $4,
				resolved_at = now(), updated_at = now(), signal_resolved = (workflow_started_at IS NOT NULL AND $4 <> 'deadline')
			WHERE id = $1`, id, r.Resolution, r.Note, r.By); err != nil {
			return err
		}
		uuid := bgcheck.CheckUUID(checkID)
		if _, err := insertEvent(ctx, tx, t, bgcheck.EventDisputeResolved, map[string]any{
			"check_id": uuid, "dispute_id": id, "status": bgcheck.DisputeResolved, "screening": screening, "resolution": r.Resolution,
		}); err != nil {
			return err
		}
		revised := assessment
		if r.Resolution.RevisesReport() {
			if revised, err = reviseReport(ctx, tx, t, checkID, screening, id); err != nil {
				return err
			}
		}
		var stillOpen bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM disputes WHERE check_id = $1 AND status = 'open')`,
			checkID).Scan(&stillOpen); err != nil {
			return err
		}
		status2 := bgcheck.CheckDispute
		if !stillOpen {
			status2 = bgcheck.CheckComplete
		}
		if _, err := tx.Exec(ctx, `UPDATE checks SET status = $2, assessment = $3, updated_at = now() WHERE id = $1`,
			checkID, status2, revised); err != nil {
			return err
		}
		if revised != assessment { // the report is complete either way, whatever disputes remain open
			if _, err := insertEvent(ctx, tx, t, bgcheck.EventCheckCompleted, map[string]any{
				"check_id": uuid, "status": bgcheck.CheckComplete, "disposition": revised,
			}); err != nil {
				return err
			}
		}
		if !stillOpen {
			if err := releaseAdverseAction(ctx, tx, checkID, revised); err != nil {
				return err
			}
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindDispute(ctx, t.AccountID, "", id)
}

// reviseReport removes the disputed screening's records (the item was corrected or deleted: it
// no longer counts against the candidate), raises the report's version and writes report.ready;
// it returns the check's assessment over the revised screenings.
func reviseReport(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant, checkID, screening, disputeID string) (bgcheck.Assessment, error) {
	if _, err := tx.Exec(ctx, `UPDATE check_screenings SET records = '[]', result = 'clear', reason = $3
		WHERE check_id = $1 AND type = $2`, checkID, screening, "revised after dispute "+disputeID); err != nil {
		return "", err
	}
	var consider bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM check_screenings WHERE check_id = $1 AND result = 'consider')`,
		checkID).Scan(&consider); err != nil {
		return "", err
	}
	assessment := bgcheck.AssessmentClear
	if consider {
		assessment = bgcheck.AssessmentConsider
	}
	var reportID, candidateID string
	var version int
	if err := tx.QueryRow(ctx, `UPDATE reports SET version = version + 1, revised_at = now(), assessment = $2
		WHERE check_id = $1 RETURNING id, candidate_id, version`, checkID, assessment).Scan(&reportID, &candidateID, &version); err != nil {
		return "", err
	}
	_, err := insertEvent(ctx, tx, t, bgcheck.EventReportReady, map[string]any{
		"check_id": bgcheck.CheckUUID(checkID), "report_id": reportID, "candidate_id": candidateID, "version": version,
	})
	return assessment, err
}

// releaseAdverseAction ends the hold of the check's adverse action in its waiting period when
// its last dispute is resolved: it resumes with the time it had left when the first dispute was
// filed (finalize_at moves out by the time held), or, when the revised report is clear, is
// canceled: its reasons no longer stand.
func releaseAdverseAction(ctx context.Context, tx pgx.Tx, checkID string, assessment bgcheck.Assessment) error {
	if assessment == bgcheck.AssessmentClear {
		_, err := tx.Exec(ctx, `UPDATE adverse_actions SET status = 'canceled', canceled_at = now(), updated_at = now(),
				on_hold = false, held_at = NULL, hold_signal_pending = false, cancel_workflow = (workflow_started_at IS NOT NULL)
			WHERE check_id = $1 AND status = 'pending'`, checkID)
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE adverse_actions SET on_hold = false, finalize_at = finalize_at + (now() - held_at), held_at = NULL,
			hold_version = hold_version + 1, hold_signal_pending = true, updated_at = now()
		WHERE check_id = $1 AND status = 'pending' AND on_hold`, checkID)
	return err
}
