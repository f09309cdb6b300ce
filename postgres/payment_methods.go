package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck"
)

const paymentMethodColumns = `id, account_id, processor, processor_ref, brand, last4, exp_month, exp_year, is_default, created_at`

// ErrPaymentMethodExists refuses a second payment method with the same processor reference.
var ErrPaymentMethodExists = bgcheck.ValidationError(bgcheck.FieldError{Field: "processor_ref",
	Message: "this account already has a payment method with this processor reference"})

// AddPaymentMethod stores a reference to a payment method a processor holds. The account's first
// one becomes its default.
func (db *DB) AddPaymentMethod(ctx context.Context, accountID string, pm bgcheck.PaymentMethod) (*bgcheck.PaymentMethod, error) {
	id := bgcheck.NewID(bgcheck.PrefixPaymentMethod)
	_, err := db.pool.Exec(ctx, `INSERT INTO payment_methods (id, account_id, processor, processor_ref, brand, last4, exp_month, exp_year, is_default)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NOT EXISTS (SELECT 1 FROM payment_methods WHERE account_id = $2 AND is_default))`,
		id, accountID, pm.Processor, pm.ProcessorRef, pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear)
	if isUniqueViolation(err, "payment_methods_account_id_processor_processor_ref_key") {
		return nil, ErrPaymentMethodExists
	}
	if isUniqueViolation(err, "payment_methods_one_default_idx") { // two first ones at once: the other is the default
		_, err = db.pool.Exec(ctx, `INSERT INTO payment_methods (id, account_id, processor, processor_ref, brand, last4, exp_month, exp_year)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, accountID, pm.Processor, pm.ProcessorRef, pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear)
	}
	if err != nil {
		return nil, err
	}
	return db.FindPaymentMethod(ctx, accountID, id)
}

// FindPaymentMethod returns one of the account's payment methods.
func (db *DB) FindPaymentMethod(ctx context.Context, accountID, id string) (*bgcheck.PaymentMethod, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+paymentMethodColumns+` FROM payment_methods WHERE id = $1 AND account_id = $2`, id, accountID)
	return collectOne[bgcheck.PaymentMethod](rows, err)
}

// ListPaymentMethods returns the account's payment methods, the default first.
func (db *DB) ListPaymentMethods(ctx context.Context, accountID string) ([]*bgcheck.PaymentMethod, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+paymentMethodColumns+` FROM payment_methods WHERE account_id = $1
		ORDER BY is_default DESC, id DESC`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[bgcheck.PaymentMethod])
}

// SetDefaultPaymentMethod makes one of the account's payment methods its default, in one
// transaction with taking the mark off the previous one.
func (db *DB) SetDefaultPaymentMethod(ctx context.Context, accountID, id string) (*bgcheck.PaymentMethod, error) {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM payment_methods WHERE id = $1 AND account_id = $2)`,
			id, accountID).Scan(&found); err != nil {
			return err
		}
		if !found {
			return bgcheck.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `UPDATE payment_methods SET is_default = false WHERE account_id = $1 AND is_default AND id <> $2`,
			accountID, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE payment_methods SET is_default = true WHERE id = $1`, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.FindPaymentMethod(ctx, accountID, id)
}

// RemovePaymentMethod deletes one of the account's payment methods; when it was the default, the
// newest remaining one becomes the default.
func (db *DB) RemovePaymentMethod(ctx context.Context, accountID, id string) error {
	return db.inTx(ctx, func(tx pgx.Tx) error {
		var wasDefault bool
		err := tx.QueryRow(ctx, `DELETE FROM payment_methods WHERE id = $1 AND account_id = $2 RETURNING is_default`, id, accountID).Scan(&wasDefault)
		if err != nil {
			return notFound(err)
		}
		if !wasDefault {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE payment_methods SET is_default = true
			WHERE id = (SELECT id FROM payment_methods WHERE account_id = $1 ORDER BY id DESC LIMIT 1)`, accountID)
		return err
	})
}
