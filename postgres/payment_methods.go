package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const paymentMethodColumns = `id, account_id, mode, processor, processor_ref, brand, last4, exp_month, exp_year, is_default, created_at`

// ErrPaymentMethodExists refuses a second payment method with the same processor reference.
var ErrPaymentMethodExists = bgcheck.ValidationError(bgcheck.FieldError{Field: "processor_ref",
	Message: "this account already has a payment method with this processor reference"})

// lockPaymentMethods serializes changes to the tenant's payment methods (which one is the
// default) on the account's row.
func lockPaymentMethods(ctx context.Context, tx pgx.Tx, t bgcheck.Tenant) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE`, t.AccountID).Scan(&one)
	return notFound(err)
}

// AddPaymentMethod stores a reference to a payment method a processor holds. The tenant's first
// one becomes its default.
func (db *DB) AddPaymentMethod(ctx context.Context, t bgcheck.Tenant, pm bgcheck.PaymentMethod) (*bgcheck.PaymentMethod, error) {
	id := bgcheck.NewID(bgcheck.PrefixPaymentMethod)
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockPaymentMethods(ctx, tx, t); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO payment_methods (id, account_id, mode, processor, processor_ref, brand, last4, exp_month, exp_year, is_default)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
				NOT EXISTS (SELECT 1 FROM payment_methods WHERE account_id = $2 AND mode = $3 AND is_default))`,
			id, t.AccountID, t.Mode, pm.Processor, pm.ProcessorRef, pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear)
		if isUniqueViolation(err, "payment_methods_account_id_mode_processor_processor_ref_key") {
			return ErrPaymentMethodExists
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindPaymentMethod(ctx, t, id)
}

// FindPaymentMethod returns one of the tenant's payment methods.
func (db *DB) FindPaymentMethod(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.PaymentMethod, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+paymentMethodColumns+` FROM payment_methods WHERE id = $1 AND account_id = $2 AND mode = $3`,
		id, t.AccountID, t.Mode)
	return collectOne[bgcheck.PaymentMethod](rows, err)
}

// ListPaymentMethods returns the tenant's payment methods, the default first.
func (db *DB) ListPaymentMethods(ctx context.Context, t bgcheck.Tenant) ([]*bgcheck.PaymentMethod, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+paymentMethodColumns+` FROM payment_methods WHERE account_id = $1 AND mode = $2
		ORDER BY is_default DESC, id DESC`, t.AccountID, t.Mode)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[bgcheck.PaymentMethod])
}

// SetDefaultPaymentMethod makes one of the tenant's payment methods its default, in one
// transaction with taking the mark off the previous one.
func (db *DB) SetDefaultPaymentMethod(ctx context.Context, t bgcheck.Tenant, id string) (*bgcheck.PaymentMethod, error) {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockPaymentMethods(ctx, tx, t); err != nil {
			return err
		}
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_methods WHERE id = $1 AND account_id = $2 AND mode = $3)`,
			id, t.AccountID, t.Mode).Scan(&found); err != nil {
			return err
		}
		if !found {
			return bgcheck.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE payment_methods SET is_default = false WHERE account_id = $1 AND mode = $2 AND is_default AND id <> $3`,
			t.AccountID, t.Mode, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE payment_methods SET is_default = true WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindPaymentMethod(ctx, t, id)
}

// RemovePaymentMethod deletes one of the tenant's payment methods; when it was the default, the
// newest remaining one becomes the default.
func (db *DB) RemovePaymentMethod(ctx context.Context, t bgcheck.Tenant, id string) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockPaymentMethods(ctx, tx, t); err != nil {
			return err
		}
		var wasDefault bool
		err := tx.QueryRow(ctx, `DELETE FROM payment_methods WHERE id = $1 AND account_id = $2 AND mode = $3 RETURNING is_default`,
			id, t.AccountID, t.Mode).Scan(&wasDefault)
		if err != nil {
			return notFound(err)
		}
		if !wasDefault {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE payment_methods SET is_default = true
			WHERE id = (SELECT id FROM payment_methods WHERE account_id = $1 AND mode = $2 ORDER BY id DESC LIMIT 1)`, t.AccountID, t.Mode)
		return err
	})
}
