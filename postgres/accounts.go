package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bgcheck/bgcheck"
)

// NewUser is a user to create; PasswordHash is an encoded argon2id hash, or "" for a user who
// signs in another way. AccountID "" creates a consumer of no account.
type NewUser struct {
	AccountID    string
	Email        string
	Name         string
	Role         bgcheck.Role
	PasswordHash string
}

// Bootstrap creates an account, its first admin user and the given API keys in one transaction,
// so a failed bootstrap leaves nothing half made.
func (db *DB) Bootstrap(ctx context.Context, accountName string, admin NewUser, keys []bgcheck.NewAPIKey) (*bgcheck.Account, *bgcheck.User, error) {
	var acct *bgcheck.Account
	var user *bgcheck.User
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if acct, err = createAccount(ctx, tx, accountName); err != nil {
			return err
		}
		admin.AccountID = acct.ID
		if user, err = createUser(ctx, tx, admin); err != nil {
			return err
		}
		for _, k := range keys {
			k.AccountID = acct.ID
			if _, err := createAPIKey(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return acct, user, nil
}

// CreateUser adds a user to an existing account. An e-mail already in use, in any account, is
// bgcheck.CodeEmailTaken.
func (db *DB) CreateUser(ctx context.Context, u NewUser) (*bgcheck.User, error) {
	return createUser(ctx, db.pool, u)
}

// FindAccount returns the account with the given id.
func (db *DB) FindAccount(ctx context.Context, id string) (*bgcheck.Account, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, name, created_at FROM accounts WHERE id = $1`, id)
	return collectOne[bgcheck.Account](rows, err)
}

func createAccount(ctx context.Context, q querier, name string) (*bgcheck.Account, error) {
	rows, err := q.Query(ctx, `INSERT INTO accounts (id, name) VALUES ($1, $2) RETURNING id, name, created_at`,
		bgcheck.NewID(bgcheck.PrefixAccount), name)
	return collectOne[bgcheck.Account](rows, err)
}

func createUser(ctx context.Context, q querier, u NewUser) (*bgcheck.User, error) {
	var hash, account *string
	if u.PasswordHash != "" {
		hash = &u.PasswordHash
	}
	if u.AccountID != "" {
		account = &u.AccountID
	}
	rows, err := q.Query(ctx, `
		INSERT INTO users (id, account_id, email, name, role, password_hash)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING id, account_id, email, name, role, created_at`,
		bgcheck.NewID(bgcheck.PrefixUser), account, u.Email, u.Name, u.Role, hash)
	user, err := collectOne[bgcheck.User](rows, err)
	if isUniqueViolation(err, "users_email_key") {
		return nil, bgcheck.Errorf(bgcheck.CodeEmailTaken, "a user with this e-mail already exists")
	}
	if isForeignKeyViolation(err) {
		return nil, bgcheck.ErrNotFound
	}
	return user, err
}

// querier is what both a pool and a transaction offer, so one statement serves both.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}

func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
