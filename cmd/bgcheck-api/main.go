// Command bgcheck-api serves bgcheck's HTTP API. It applies pending migrations at start, so a
// fresh database is ready on first run; several instances may start at once.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/postgres"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.FromEnv()
	if err != nil {
		slog.Error("configuration", "err", err)
		os.Exit(2)
	}
	log := config.NewLogger(cfg)
	if err := run(ctx, cfg, log); err != nil {
		log.Error("bgcheck-api stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "versions", applied)
	}

	keys := auth.NewVerifier(db, auth.DefaultKeyCacheTTL, log)
	flushDone := make(chan struct{})
	flushCtx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(flushDone); keys.Run(flushCtx, 5*time.Second) }()

	srv := &http.Server{
		Addr: cfg.HTTPAddr,
		Handler: api.New(db, keys, api.Options{
			AllowPrivateWebhookURLs: cfg.AllowPrivateWebhookURLs,
			TrustedProxies:          cfg.TrustedProxies,
			Logger:                  log,
		}).Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ListenAndServe() }()
	log.Info("bgcheck-api listening", "addr", cfg.HTTPAddr)

	select {
	case err = <-serveErr:
	case <-ctx.Done():
		log.Info("shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = srv.Shutdown(shutdownCtx)
	}
	stopFlush()
	<-flushDone // the last record of key use is written before the pool closes
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
