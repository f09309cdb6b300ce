// Package apiserver wires bgcheck's HTTP API to its dependencies and runs it until told to stop.
// cmd/bgcheck-api and cmd/bgcheck-dev both call it, so local development runs the production
// wiring.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/dispatcher"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/metrics"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
	"github.com/bgcheck/bgcheck/retention"
	"github.com/bgcheck/bgcheck/secretbox"
)

// Run listens on cfg.HTTPAddr and serves there as Serve does.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, cfg, log)
}

// Serve connects to cfg.DatabaseURL, applies pending migrations (so a fresh database is ready on
// first run; several instances may start at once) unless cfg.SkipMigrations, prunes old records
// daily (package retention), and serves the API on ln until ctx is done,
// then shuts down gracefully: requests in flight get 20 seconds, and the last record of API-key
// use is written before the pool closes. ln is closed on return. Serve takes a listener so that a
// caller can announce the address, or learn the port of ":0", before serving.
func Serve(ctx context.Context, ln net.Listener, cfg config.Config, log *slog.Logger) error {
	mailer, err := mail.New(cfg.SMTPURL, log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("BGCHECK_SMTP_URL: %w", err)
	}
	secrets, err := secretbox.Parse(cfg.SecretsKeys())
	if err != nil {
		ln.Close()
		return fmt.Errorf("BGCHECK_SECRETS_KEY: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithSecrets(secrets))
	if err != nil {
		ln.Close()
		return err
	}
	defer db.Close()
	if err := migrateOrCheck(ctx, db, cfg, log); err != nil {
		ln.Close()
		return err
	}
	// Secrets stored before they were sealed (or by an older version) are sealed now.
	if n, err := db.ResealSecrets(ctx, true); err != nil {
		ln.Close()
		return fmt.Errorf("seal stored webhook secrets: %w", err)
	} else if n > 0 {
		log.Info("sealed plaintext webhook secrets", "endpoints", n)
	}

	tokens, err := signingKeys(cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	// Rate-limit counters: in memory, or in Redis when BGCHECK_REDIS_URL is set. An unreachable
	// Redis does not stop the start: the limiter counts in memory until it answers.
	limits, err := limiter.New(cfg.RateLimits, limiter.Options{
		RedisURL: cfg.RedisURL, Prefix: cfg.RedisPrefix, Logger: log.With("component", "ratelimit"),
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("BGCHECK_REDIS_URL: %w", err)
	}
	defer limits.Close(context.Background())
	store := "memory"
	if cfg.RedisURL != "" {
		store = "redis"
	}
	log.Info("rate limits", "auth", cfg.RateLimits.Auth.String(), "consumer", cfg.RateLimits.Consumer.String(),
		"platform", cfg.RateLimits.Platform.String(), "counters", store)

	// The process's metrics, served at /metrics; the outbox is counted at each scrape.
	registry := metrics.NewRegistry()
	counters := metrics.NewAPI(registry)
	registry.MustRegister(metrics.NewUndispatched(db.CountUndispatched, 2*time.Second))
	registry.MustRegister(metrics.NewOldestPending(db.OldestPendingDelivery, 2*time.Second))

	// The Temporal client connects lazily: the API accepts events while Temporal is down. It only
	// asks Temporal whether a delivery's workflow still runs (redelivery) and whether Temporal
	// answers (/readyz): workers dispatch the outbox and start workflows.
	tc, err := client.NewLazyClient(client.Options{
		HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace,
		Logger: tlog.NewStructuredLogger(log.With("source", "temporal-sdk")),
		// Uncompressed, as the workers' (see worker.dial): its requests are small.
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}},
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer tc.Close()
	deliveryWorkflows := dispatcher.New(db, tc, dispatcher.Options{}, log.With("component", "dispatcher"))

	// Retention: every instance runs it; the lock in Prune lets one at a time delete.
	pruneCtx, stopPrune := context.WithCancel(context.WithoutCancel(ctx))
	pruneDone := make(chan struct{})
	go func() {
		defer close(pruneDone)
		policy := postgres.RetentionPolicy{Events: cfg.RetentionEvents}
		retention.New(db, policy, log.With("component", "retention")).Run(pruneCtx, retention.DefaultInterval)
	}()

	keys := auth.NewVerifier(db, auth.DefaultKeyCacheTTL, log)
	flushDone := make(chan struct{})
	flushCtx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(flushDone); keys.Run(flushCtx, 5*time.Second) }()

	handler := api.New(db, keys, api.Options{
		AllowPrivateWebhookURLs: cfg.AllowPrivateWebhookURLs,
		TrustedProxies:          cfg.TrustedProxies,
		ProxyHeader:             cfg.TrustedProxyHeader,
		RateLimits:              limits,
		Logger:                  log,
		Temporal:                tc,
		Workflows:               deliveryWorkflows,
		Tokens:                  tokens,
		PortalURL:               cfg.PortalURL,
		PublicURL:               cfg.PublicURL,
		SSOPrivateNetworks:      cfg.SSOPrivateNetworks,
		TemporalUIURL:           cfg.TemporalUIURL,
		TemporalNamespace:       cfg.TemporalNamespace,
		Mailer:                  mailer,
		Metrics:                 counters,
		Gatherer:                registry,
	})
	srv := newHTTPServer(handler.Handler())
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("bgcheck-api listening", "addr", ln.Addr().String())

	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = srv.Shutdown(shutdownCtx)
	}
	handler.Wait() // magic-link mails in flight
	stopFlush()
	stopPrune() // a prune in progress stops between batches; what it deleted stays deleted
	<-flushDone // the last record of key use is written before the pool closes
	<-pruneDone
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// migrateOrCheck applies pending migrations, or, when cfg.SkipMigrations leaves that to
// `bgcheckctl migrate`, refuses to serve on a schema older than this binary: its queries would
// fail at the first request that meets a missing column or index, far from the cause.
func migrateOrCheck(ctx context.Context, db *postgres.DB, cfg config.Config, log *slog.Logger) error {
	if !cfg.SkipMigrations {
		applied, err := db.Migrate(ctx)
		if err != nil {
			return err
		}
		if len(applied) > 0 {
			log.Info("applied migrations", "versions", applied)
		}
		return nil
	}
	current, want, err := db.SchemaVersions(ctx)
	if err != nil {
		return err
	}
	if current < want {
		return fmt.Errorf("the database schema is at version %d, this binary needs %d: run bgcheckctl migrate (BGCHECK_AUTO_MIGRATE is false)", current, want)
	}
	log.Info("migrations left to bgcheckctl migrate; the schema is current", "version", current)
	return nil
}

// signingKeys builds the JWT issuer from BGCHECK_JWT_SIGNING_KEY (and BGCHECK_JWT_PREVIOUS_KEYS).
// Without a key it makes a random one and says so: fine for development, but every token dies
// with the process and instances would not accept each other's tokens.
func signingKeys(cfg config.Config, log *slog.Logger) (*auth.Tokens, error) {
	if cfg.JWTSigningKey == "" {
		log.Warn("BGCHECK_JWT_SIGNING_KEY is not set: signing portal tokens with a random key; they will not survive a restart")
		return auth.NewTokens(auth.RandomKey())
	}
	previous := make([][]byte, len(cfg.JWTPreviousKeys))
	for i, k := range cfg.JWTPreviousKeys {
		previous[i] = []byte(k)
	}
	t, err := auth.NewTokens([]byte(cfg.JWTSigningKey), previous...)
	if err != nil {
		return nil, fmt.Errorf("BGCHECK_JWT_SIGNING_KEY: %w", err)
	}
	log.Info("signing portal tokens", "kid", auth.KeyID([]byte(cfg.JWTSigningKey)), "previous_keys", len(previous))
	return t, nil
}

// newHTTPServer bounds every phase of a connection: a client that sends its headers or body
// slowly, or reads the answer slowly, or idles, is cut off. The write timeout is longer than
// api.DefaultRequestTimeout, so a request past its deadline still hears its 503.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
}
