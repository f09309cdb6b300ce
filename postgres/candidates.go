package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const candidateColumns = `id, account_id, mode, first_name, last_name, email, phone, dob::text AS dob, created_at, updated_at`

// CandidatePatch holds the fields of a PATCH: nil leaves a field as it is, and for the optional
// fields a pointer to "" clears it.
type CandidatePatch struct {
	FirstName *string
	LastName  *string
	Email     *string
	Phone     *string
	DOB       *string
}

// CreateCandidate stores a new candidate for the tenant.
func (db *DB) CreateCandidate(ctx context.Context, t bgcheck.Tenant, c bgcheck.Candidate) (*bgcheck.Candidate, error) {
	rows, err := db.pool.Query(ctx, `
		INSERT INTO candidates (id, account_id, mode, first_name, last_name, email, phone, dob)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::date) RETURNING `+candidateColumns,
		bgcheck.NewID(bgcheck.PrefixCandidate), t.AccountID, t.Mode, c.FirstName, c.LastName, c.Email, c.Phone, c.DOB)
	return collectOne[bgcheck.Candidate](rows, err)
}

// ListCandidates returns a page of the tenant's candidates, newest first.
func (db *DB) ListCandidates(ctx context.Context, t bgcheck.Tenant, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.Candidate], error) {
	return page(ctx, db, p, func(c *bgcheck.Candidate) string { return c.ID }, `
		SELECT `+candidateColumns+` FROM candidates
		WHERE account_id = $1 AND mode = $2 AND ($3 = '' OR id < $3)
		ORDER BY id DESC LIMIT $4`, t.AccountID, t.Mode)
}

// FindCandidate returns one of the tenant's candidates.
func (db *DB) FindCandidate(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.Candidate, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+candidateColumns+` FROM candidates
		WHERE id = $1 AND account_id = $2 AND mode = $3`, id, t.AccountID, t.Mode)
	return collectOne[bgcheck.Candidate](rows, err)
}

// UpdateCandidate applies a patch. When the patch changes the candidate, a candidate.updated
// event carrying the new record is written in the same transaction, so the change and its event
// exist together or not at all. A patch that changes nothing writes no event.
func (db *DB) UpdateCandidate(ctx context.Context, t bgcheck.Tenant, id string, p CandidatePatch) (*bgcheck.Candidate, *bgcheck.Event, error) {
	var cand *bgcheck.Candidate
	var event *bgcheck.Event
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// Lock the row and remember it, to tell a real change from a no-op.
		rows, err := tx.Query(ctx, `SELECT `+candidateColumns+` FROM candidates
			WHERE id = $1 AND account_id = $2 AND mode = $3 FOR UPDATE`, id, t.AccountID, t.Mode)
		before, err := collectOne[bgcheck.Candidate](rows, err)
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			UPDATE candidates SET
				first_name = coalesce($2, first_name),
				last_name  = coalesce($3, last_name),
				email = CASE WHEN $4::text IS NULL THEN email ELSE nullif($4, '') END,
				phone = CASE WHEN $5::text IS NULL THEN phone ELSE nullif($5, '') END,
				dob   = CASE WHEN $6::text IS NULL THEN dob ELSE nullif($6, '')::date END
			WHERE id = $1
			RETURNING `+candidateColumns, id, p.FirstName, p.LastName, p.Email, p.Phone, p.DOB)
		if cand, err = collectOne[bgcheck.Candidate](rows, err); err != nil {
			return err
		}
		if sameCandidate(before, cand) {
			cand.UpdatedAt = before.UpdatedAt
			return nil
		}
		if err := tx.QueryRow(ctx, `UPDATE candidates SET updated_at = now() WHERE id = $1 RETURNING updated_at`,
			id).Scan(&cand.UpdatedAt); err != nil {
			return err
		}
		event, err = insertEvent(ctx, tx, t, bgcheck.EventCandidateUpdated, cand)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return cand, event, nil
}

func sameCandidate(a, b *bgcheck.Candidate) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.FirstName == b.FirstName && a.LastName == b.LastName &&
		eq(a.Email, b.Email) && eq(a.Phone, b.Phone) && eq(a.DOB, b.DOB)
}

// DeleteCandidate removes one of the tenant's candidates.
func (db *DB) DeleteCandidate(ctx context.Context, t bgcheck.Tenant, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM candidates WHERE id = $1 AND account_id = $2 AND mode = $3`,
		id, t.AccountID, t.Mode)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return bgcheck.ErrNotFound
	}
	return nil
}
