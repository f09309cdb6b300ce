// Package devstack starts a bgcheck deployment on this machine for the end-to-end tests and the
// benchmarks: a fresh, migrated database on the tests' PostgreSQL with an account and a test-mode
// API key, and a Temporal server (the pinned dev server in memory or on disk, or a cluster on
// PostgreSQL) with the workflows' search attributes. The service itself then runs in the caller's
// process (Config) or as its own binaries (Build, StartProcess, Environ).
package devstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/testserver"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/secretbox"
	"github.com/bgcheck/bgcheck/workflows"
)

// The Temporal servers a stack can run.
const (
	// TemporalMemory is the pinned CLI's dev server, in memory.
	TemporalMemory = "dev"
	// TemporalDisk is the dev server on an SQLite file in WAL mode, as make dev runs it.
	TemporalDisk = "disk"
	// TemporalServer is temporal-server on SQLite in memory, its history and visibility in
	// databases of their own (see devtemporal.Options.SQLite).
	TemporalServer = "server"
	// TemporalPostgres is a cluster (temporal-server of the version the CLI embeds) on the
	// tests' PostgreSQL, in throwaway databases, as production runs it.
	TemporalPostgres = "postgres"
	// TemporalNone starts none: the caller starts one at Options.TemporalPort when it wants.
	TemporalNone = "none"
)

// Options say what to start; the zero value of each field but Dir takes its default.
type Options struct {
	// Dir holds the Temporal server's log and, on disk, its database. Required.
	Dir string
	// DatabasePrefix starts the database's name (default "bgcheck_stack_"), so that a benchmark's
	// database can be told apart in pg_stat_database.
	DatabasePrefix string
	// Temporal is one of the Temporal* kinds (default TemporalMemory).
	Temporal string
	// TemporalPort is the port of TemporalNone's server.
	TemporalPort int
	// DynamicConfig changes the server's dynamic config, which starts as devtemporal.Tuned (the
	// settings make dev runs); an empty value removes a setting.
	DynamicConfig map[string]string
	// Logger gets the stack's messages and the building of the Temporal binaries
	// (default slog.Default()).
	Logger *slog.Logger
	// Keep leaves the databases behind when the stack closes, for inspection.
	Keep bool
}

// Stack is a running deployment's shared parts. Close it.
type Stack struct {
	// DatabaseURL and DatabaseName name the service's database.
	DatabaseURL, DatabaseName string
	// DB is a handle on it, with the development secrets keyring the binaries use.
	DB *postgres.DB
	// Temporal is the server started, nil with TemporalNone.
	Temporal *devtemporal.Server
	// TemporalAddress is where the service finds Temporal.
	TemporalAddress string
	// AccountID is the account bootstrapped, TestKey a full-access test-mode key of it.
	AccountID, TestKey string

	log     *slog.Logger
	closers []func()
}

// Start starts a stack. On error, whatever was started is stopped again.
func Start(ctx context.Context, o Options) (st *Stack, err error) {
	if o.Dir == "" {
		return nil, errors.New("devstack: Options.Dir is required")
	}
	st = &Stack{log: cmp.Or(o.Logger, slog.Default())}
	defer func() {
		if err != nil {
			st.Close()
			st = nil
		}
	}()
	if err := st.startDatabase(ctx, o); err != nil {
		return nil, err
	}
	if err := st.startTemporal(ctx, o); err != nil {
		return nil, err
	}
	return st, nil
}

// startDatabase creates the migrated database, opens it and bootstraps the account and its key.
func (st *Stack) startDatabase(ctx context.Context, o Options) error {
	dbURL, name, drop, err := pgtest.Create(ctx, cmp.Or(o.DatabasePrefix, "bgcheck_stack_"))
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	st.DatabaseURL, st.DatabaseName = dbURL, name
	st.onClose(func() {
		if o.Keep {
			st.log.Info("kept the database", "url", dbURL)
			return
		}
		if err := drop(); err != nil {
			st.log.Warn("devstack: drop the database", "name", name, "err", err)
		}
	})
	secrets, err := secretbox.Parse(config.DevelopmentSecretsKey, nil)
	if err != nil {
		return err
	}
	if st.DB, err = postgres.Open(ctx, dbURL, postgres.WithSecrets(secrets)); err != nil {
		return err
	}
	st.onClose(st.DB.Close)
	key := auth.NewAPIKey(bgcheck.ModeTest)
	acct, _, err := st.DB.Bootstrap(ctx, "Stack", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin},
		[]bgcheck.NewAPIKey{{Mode: bgcheck.ModeTest, Hash: key.Hash, Prefix: key.Prefix, Last4: key.Last4}})
	if err != nil {
		return fmt.Errorf("devstack: bootstrap the account: %w", err)
	}
	st.AccountID, st.TestKey = acct.ID, key.Raw
	return nil
}

// startTemporal starts the server o asks for, with the workflows' search attributes.
func (st *Stack) startTemporal(ctx context.Context, o Options) error {
	opts := devtemporal.Options{
		SearchAttributes: workflows.SearchAttributes,
		DynamicConfig:    devtemporal.Tuned(),
		LogFile:          filepath.Join(o.Dir, "temporal.log"),
		Logger:           st.log,
	}
	for k, v := range o.DynamicConfig {
		if v == "" {
			delete(opts.DynamicConfig, k)
		} else {
			opts.DynamicConfig[k] = v
		}
	}
	switch cmp.Or(o.Temporal, TemporalMemory) {
	case TemporalNone:
		st.TemporalAddress = fmt.Sprintf("127.0.0.1:%d", o.TemporalPort)
		return nil
	case TemporalMemory:
	case TemporalDisk:
		opts.DBFile = filepath.Join(o.Dir, "temporal.db")
	case TemporalServer:
		opts.SQLite = true
	case TemporalPostgres:
		pg, err := devtemporal.PostgresOn(testserver.URL(), st.DatabaseName+"_temporal_")
		if err != nil {
			return err
		}
		opts.Postgres = pg
		st.onClose(func() { // after the cluster's stop, registered below
			if o.Keep {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pg.DropOn(ctx, testserver.URL()); err != nil {
				st.log.Warn("devstack: drop the Temporal databases", "err", err)
			}
		})
	default:
		return fmt.Errorf("devstack: Temporal %q: want %s, %s, %s, %s or %s", o.Temporal, TemporalMemory, TemporalDisk, TemporalServer, TemporalPostgres, TemporalNone)
	}
	srv, err := devtemporal.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting Temporal (set $%s to a temporal CLI to skip building one): %w", devtemporal.BinaryEnv, err)
	}
	st.Temporal, st.TemporalAddress = srv, srv.Address
	st.onClose(srv.Stop)
	return nil
}

// Config is the configuration of an API or a worker run in this process against the stack:
// development mode, webhook URLs on this machine allowed.
func (st *Stack) Config() config.Config {
	return config.Config{
		Env: config.EnvDevelopment, DatabaseURL: st.DatabaseURL,
		TemporalAddress: st.TemporalAddress, TemporalNamespace: devtemporal.Namespace,
		AllowPrivateWebhookURLs: true, LogLevel: "info",
	}
}

// Environ is Config as the environment of the service's binaries, to which a caller appends its
// own settings (a later NAME= wins).
func (st *Stack) Environ() []string {
	c := st.Config()
	return []string{
		"BGCHECK_ENV=" + c.Env, "DATABASE_URL=" + c.DatabaseURL,
		"TEMPORAL_ADDRESS=" + c.TemporalAddress, "TEMPORAL_NAMESPACE=" + c.TemporalNamespace,
		"BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true", "BGCHECK_LOG_LEVEL=" + c.LogLevel,
	}
}

// Close stops what Start started, last first, and drops the databases (unless Options.Keep).
func (st *Stack) Close() {
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
	st.closers = nil
}

func (st *Stack) onClose(f func()) { st.closers = append(st.closers, f) }
