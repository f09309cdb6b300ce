package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

// MaxEndpointsPerMode is how many live (not deleted) webhook endpoints an account may have in
// each mode (API.md §4).
const MaxEndpointsPerMode = 50

// endpointColumns are what the API shows; the secret is read only where it is used.
const endpointColumns = `id, account_id, mode, url, events, description, enabled, created_at, updated_at,
	CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS previous_secret_expires_at,
	last_success_at, failing_since, disabled_at, disabled_reason, paused_at`

// EndpointPatch holds the fields of a PATCH; nil means "leave as it is".
type EndpointPatch struct {
	URL         *string
	Events      []string
	Description *string
	Enabled     *bool
}

// CreateEndpoint stores a new endpoint for the tenant. Past MaxEndpointsPerMode it returns a
// validation error; the count and the insert happen under a per-tenant lock, so concurrent
// creates cannot overshoot the limit.
func (db *DB) CreateEndpoint(ctx context.Context, t bgcheck.Tenant, e bgcheck.WebhookEndpoint) (*bgcheck.WebhookEndpoint, error) {
	var out *bgcheck.WebhookEndpoint
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('endpoints:' || $1 || ':' || $2, 0))`,
			t.AccountID, t.Mode); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints
			WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL`, t.AccountID, t.Mode).Scan(&n); err != nil {
			return err
		}
		if n >= MaxEndpointsPerMode {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "url",
				Message: fmt.Sprintf("an account may have at most %d webhook endpoints per mode", MaxEndpointsPerMode)})
		}
		id := bgcheck.NewID(bgcheck.PrefixEndpoint)
		keyID, sealed, err := db.sealSecret(id, e.Secret)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			INSERT INTO webhook_endpoints (id, account_id, mode, url, events, description, enabled, secret_key_id, secret_sealed)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+endpointColumns,
			id, t.AccountID, t.Mode, e.URL, e.Events, e.Description, e.Enabled, keyID, sealed)
		out, err = collectOne[bgcheck.WebhookEndpoint](rows, err)
		return err
	})
	if err != nil {
		return nil, err
	}
	out.Secret = e.Secret // shown once, at creation; stored only sealed
	return out, nil
}

// ListEndpoints returns a page of the tenant's endpoints, newest first.
func (db *DB) ListEndpoints(ctx context.Context, t bgcheck.Tenant, p bgcheck.ListParams) (bgcheck.Page[*bgcheck.WebhookEndpoint], error) {
	return page(ctx, db, p, func(e *bgcheck.WebhookEndpoint) string { return e.ID }, `
		SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE account_id = $1 AND mode = $2 AND deleted_at IS NULL AND ($3 = '' OR id < $3)
		ORDER BY id DESC LIMIT $4`, t.AccountID, t.Mode)
}

// FindEndpoint returns one of the tenant's endpoints.
func (db *DB) FindEndpoint(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.WebhookEndpoint, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL`, id, t.AccountID, t.Mode)
	return collectOne[bgcheck.WebhookEndpoint](rows, err)
}

// UpdateEndpoint applies a patch and returns the endpoint as it now is.
func (db *DB) UpdateEndpoint(ctx context.Context, t bgcheck.Tenant, id string, p EndpointPatch) (*bgcheck.WebhookEndpoint, error) {
	rows, err := db.pool.Query(ctx, `
		UPDATE webhook_endpoints SET
			url = coalesce($4, url),
			events = coalesce($5, events),
			description = coalesce($6, description),
			enabled = coalesce($7, enabled),
			-- Enabled again (after an automatic disable, say): the failing clock starts afresh.
			disabled_at = CASE WHEN $7::boolean THEN NULL ELSE disabled_at END,
			disabled_reason = CASE WHEN $7::boolean THEN NULL ELSE disabled_reason END,
			failing_since = CASE WHEN $7::boolean AND NOT enabled THEN NULL ELSE failing_since END,
			updated_at = now()
		WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL
		RETURNING `+endpointColumns, id, t.AccountID, t.Mode, p.URL, p.Events, p.Description, p.Enabled)
	return collectOne[bgcheck.WebhookEndpoint](rows, err)
}

// RotateEndpointSecret replaces the endpoint's signing secret. The replaced one keeps signing
// beside the new one for keepPrevious (0: it stops at once), so receivers can move to the new
// secret without a delivery they refuse; a secret replaced before that is dropped.
func (db *DB) RotateEndpointSecret(ctx context.Context, t bgcheck.Tenant, id, secret string, keepPrevious time.Duration) (*bgcheck.WebhookEndpoint, error) {
	keyID, sealed, err := db.sealSecret(id, secret)
	if err != nil {
		return nil, err
	}
	var ep *bgcheck.WebhookEndpoint
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var plain, oldKeyID *string
		var oldSealed []byte
		err := tx.QueryRow(ctx, `SELECT secret, secret_key_id, secret_sealed FROM webhook_endpoints
			WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL FOR UPDATE`, id, t.AccountID, t.Mode).
			Scan(&plain, &oldKeyID, &oldSealed)
		if err != nil {
			return notFound(err)
		}
		var prevKeyID *string
		var prevSealed []byte
		var prevExpires *time.Time
		if keepPrevious > 0 {
			old, err := db.openSecret(id, plain, oldKeyID, oldSealed)
			if err != nil {
				return err
			}
			k, s, err := db.sealSecret(id, old)
			if err != nil {
				return err
			}
			expires := time.Now().Add(keepPrevious)
			prevKeyID, prevSealed, prevExpires = &k, s, &expires
		}
		rows, err := tx.Query(ctx, `UPDATE webhook_endpoints SET secret = NULL, secret_key_id = $2, secret_sealed = $3,
				previous_secret_key_id = $4, previous_secret_sealed = $5, previous_secret_expires_at = $6, updated_at = now()
			WHERE id = $1 RETURNING `+endpointColumns, id, keyID, sealed, prevKeyID, prevSealed, prevExpires)
		ep, err = collectOne[bgcheck.WebhookEndpoint](rows, err)
		return err
	})
	return ep, err
}

// CanceledDelivery names a delivery whose attempt series was running when it was canceled.
type CanceledDelivery struct {
	ID     string
	Series int
}

// DeleteEndpoint removes an endpoint from the API. The row stays, marked deleted, so the
// history of its deliveries survives; its pending deliveries are canceled in the same
// transaction and returned, so their workflows can be stopped too.
func (db *DB) DeleteEndpoint(ctx context.Context, t bgcheck.Tenant, id string) ([]CanceledDelivery, error) {
	var canceled []CanceledDelivery
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = now(), enabled = false, updated_at = now()
			WHERE id = $1 AND account_id = $2 AND mode = $3 AND deleted_at IS NULL`, id, t.AccountID, t.Mode)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return bgcheck.ErrNotFound
		}
		// A delivery whose workflow was started is marked for its workflow to be canceled too;
		// the dispatcher does that, and retries until Temporal confirms.
		rows, err := tx.Query(ctx, `UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL, updated_at = now(),
				cancel_workflow = (dispatched_at IS NOT NULL)
			WHERE endpoint_id = $1 AND status = 'pending' RETURNING id, series`, id)
		if err != nil {
			return err
		}
		if canceled, err = pgx.CollectRows(rows, pgx.RowToStructByPos[CanceledDelivery]); err != nil || len(canceled) == 0 {
			return err
		}
		err = announceOutbox(ctx, tx)
		return err
	})
	return canceled, err
}
