package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// InvitedCheck is what an invitation link leads to.
type InvitedCheck struct {
	CheckID     string
	CandidateID string
	Email       string
	Name        string
}

var errInvalidInvitation = bgcheck.Errorf(bgcheck.CodeInvalidInvitation,
	"this invitation link is unknown or has expired; ask the employer for a new one")

// CreateInvitation stores the hash of an invitation link's token for a check.
func (db *DB) CreateInvitation(ctx context.Context, checkID string, tokenHash []byte, expires time.Time) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO check_invitations (token_hash, check_id, expires_at) VALUES ($1, $2, $3)`,
		tokenHash, checkID, expires)
	return err
}

// UseInvitation resolves an invitation link to its check and candidate, and signs the candidate
// in: the consumer user with the candidate's e-mail address (created on first use, with no
// password) is linked to the candidate. The link works until it expires, so a candidate may
// open it again; an unknown or expired link is bgcheck.CodeInvalidInvitation. An address that
// belongs to an admin is refused: an admin's sign-in is never created from an invitation.
func (db *DB) UseInvitation(ctx context.Context, tokenHash []byte) (*bgcheck.User, *InvitedCheck, error) {
	var inv InvitedCheck
	var user *bgcheck.User
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var first, last string
		err := tx.QueryRow(ctx, `
			SELECT c.id, c.candidate_id, cand.email, cand.first_name, cand.last_name
			FROM check_invitations i JOIN checks c ON c.id = i.check_id JOIN candidates cand ON cand.id = c.candidate_id
			WHERE i.token_hash = $1 AND i.expires_at > now() AND cand.email IS NOT NULL`, tokenHash).
			Scan(&inv.CheckID, &inv.CandidateID, &inv.Email, &first, &last)
		if err == pgx.ErrNoRows {
			return errInvalidInvitation
		}
		if err != nil {
			return err
		}
		inv.Name = first + " " + last
		rows, err := tx.Query(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1)`, inv.Email)
		user, err = collectOne[bgcheck.User](rows, err)
		switch {
		case err == bgcheck.ErrNotFound:
			rows, err := tx.Query(ctx, `INSERT INTO users (id, email, name, role) VALUES ($1, $2, $3, 'consumer')
				RETURNING `+userColumns, bgcheck.NewID(bgcheck.PrefixUser), inv.Email, inv.Name)
			if user, err = collectOne[bgcheck.User](rows, err); err != nil {
				return err
			}
		case err != nil:
			return err
		case user.Role != bgcheck.RoleConsumer:
			return bgcheck.Errorf(bgcheck.CodeForbidden, "this invitation's address belongs to an admin; sign in as a candidate with another address")
		}
		_, err = tx.Exec(ctx, `INSERT INTO candidate_users (candidate_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			inv.CandidateID, user.ID)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return user, &inv, nil
}

// consumerChecksWhere limits checks to those of candidates linked to the consumer user $1.
const consumerChecksWhere = ` WHERE c.candidate_id IN (SELECT candidate_id FROM candidate_users WHERE user_id = $1) `

// ConsumerChecks returns the checks of every candidate the consumer user is, newest first.
func (db *DB) ConsumerChecks(ctx context.Context, userID string) ([]*bgcheck.Check, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+checkColumns+checkFrom+consumerChecksWhere+`ORDER BY c.id DESC LIMIT 100`, userID)
	if err != nil {
		return nil, err
	}
	checks, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[bgcheck.Check])
	if err != nil {
		return nil, err
	}
	return checks, db.withScreenings(ctx, checks)
}

// ConsumerCheck returns one check of a candidate the consumer user is; any other is
// bgcheck.ErrNotFound.
func (db *DB) ConsumerCheck(ctx context.Context, userID, checkID string) (*bgcheck.Check, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+checkColumns+checkFrom+consumerChecksWhere+`AND c.id = $2`, userID, checkID)
	c, err := collectOne[bgcheck.Check](rows, err)
	if err != nil {
		return nil, err
	}
	return c, db.withScreenings(ctx, []*bgcheck.Check{c})
}

// CandidateDetails are what a candidate gives when consenting. They are stored sealed (see
// SecretBox), bound to the candidate; only the SSN's last four digits are kept in the clear.
type CandidateDetails struct {
	SSN     string `json:"ssn"`
	Address string `json:"address"`
}

// AuthorizeCheck records the candidate's consent to a check, with their details, and asks the
// dispatcher to tell the check's workflow: the check becomes pending, and its usage is recorded
// (once: a suspended check authorized again is not billed twice). A check waiting for consent
// (before its invitation expires) or suspended for the candidate's correction can be authorized;
// a finished one is ErrCheckFinished, and one that is not the consumer's is bgcheck.ErrNotFound.
func (db *DB) AuthorizeCheck(ctx context.Context, userID, checkID string, d CandidateDetails, ssnLast4 string) (*bgcheck.Check, error) {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var candidateID string
		var status bgcheck.CheckStatus
		var expired bool
		err := tx.QueryRow(ctx, `SELECT c.candidate_id, c.status, c.invitation_expires_at <= now() FROM checks c`+
			consumerChecksWhere+`AND c.id = $2 FOR UPDATE OF c`, userID, checkID).Scan(&candidateID, &status, &expired)
		if err != nil {
			return notFound(err)
		}
		if !(status == bgcheck.CheckInvitationPending && !expired) && status != bgcheck.CheckSuspended {
			return bgcheck.Errorf(bgcheck.CodeCheckFinished, "this check no longer waits for your authorization (it is %s)", status)
		}
		plain, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if db.secrets == nil {
			return errNoSecretBox
		}
		keyID, sealed, err := db.secrets.Seal(plain, []byte(candidateID))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO candidate_details (candidate_id, key_id, sealed, ssn_last4) VALUES ($1, $2, $3, $4)
			ON CONFLICT (candidate_id) DO UPDATE SET key_id = excluded.key_id, sealed = excluded.sealed,
				ssn_last4 = excluded.ssn_last4, updated_at = now()`, candidateID, keyID, sealed, ssnLast4); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE checks SET status = 'pending', reason = NULL, signal_authorized = true,
			authorized_at = coalesce(authorized_at, now()), updated_at = now() WHERE id = $1`, checkID); err != nil {
			return err
		}
		if err := recordUsage(ctx, tx, checkID); err != nil {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.ConsumerCheck(ctx, userID, checkID)
}

// ConsumerReports returns the reports of every candidate the consumer user is, newest first:
// every consumer has the right to a copy of their own.
func (db *DB) ConsumerReports(ctx context.Context, userID string) ([]*bgcheck.Report, error) {
	rows, err := db.pool.Query(ctx, `SELECT r.id, r.check_id, r.account_id, r.mode, r.candidate_id, c.package, r.assessment, r.created_at, r.version, r.revised_at
		FROM reports r JOIN checks c ON c.id = r.check_id`+consumerChecksWhere+`ORDER BY r.id DESC LIMIT 100`, userID)
	if err != nil {
		return nil, err
	}
	reports, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByNameLax[bgcheck.Report])
	if err != nil {
		return nil, err
	}
	return reports, db.withSections(ctx, reports)
}

// SSNLast4 returns the last four digits of a candidate's SSN, or "" when none was given.
func (db *DB) SSNLast4(ctx context.Context, candidateID string) (string, error) {
	var last4 string
	err := db.pool.QueryRow(ctx, `SELECT ssn_last4 FROM candidate_details WHERE candidate_id = $1`, candidateID).Scan(&last4)
	if err == pgx.ErrNoRows {
		return "", nil
	}
	return last4, err
}

// openDetails unseals a candidate's details.
func (db *DB) openDetails(candidateID, keyID string, sealed []byte) (CandidateDetails, error) {
	var d CandidateDetails
	if db.secrets == nil {
		return d, errNoSecretBox
	}
	plain, err := db.secrets.Open(keyID, sealed, []byte(candidateID))
	if err != nil {
		return d, fmt.Errorf("postgres: details of candidate %s: %w", candidateID, err)
	}
	return d, json.Unmarshal(plain, &d)
}
