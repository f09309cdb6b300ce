package worker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/dispatcher"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/screening"
	"github.com/bgcheck/bgcheck/secretbox"
	"github.com/bgcheck/bgcheck/sso"
	"github.com/bgcheck/bgcheck/workflows"
)

// Dial connects to Temporal, retrying until it answers or ctx ends, so a worker or API started
// before Temporal waits for it instead of failing.
func Dial(ctx context.Context, cfg config.Config, log *slog.Logger) (client.Client, error) {
	return dial(ctx, cfg, nil, log)
}

// dial is Dial with the SDK's metrics going to handler (nil: none).
func dial(ctx context.Context, cfg config.Config, handler client.MetricsHandler, log *slog.Logger) (client.Client, error) {
	opts := client.Options{
		HostPort:       cfg.TemporalAddress,
		Namespace:      cfg.TemporalNamespace,
		Logger:         tlog.NewStructuredLogger(log.With("source", "temporal-sdk")),
		MetricsHandler: handler,
		// The SDK gzips every request by default. Its requests here are small (a start, a
		// task's completion), and compressing them cost this process 9% of its CPU (perf,
		// 150 deliveries/s) and the server the inflating: 6.45 machine CPU-ms a delivery
		// without it against 7.53 with it (make bench-delivery, -temporal server).
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}},
	}
	wait := 500 * time.Millisecond
	for {
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			return c, nil
		}
		log.Warn("Temporal is not reachable yet", "address", cfg.TemporalAddress, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dial Temporal at %s: %w", cfg.TemporalAddress, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// Run is the worker process: it serves its metrics on cfg.WorkerMetricsAddr (unless ""), connects
// to PostgreSQL and Temporal, polls until ctx ends (SIGTERM), then stops polling and lets attempts
// in flight finish. The metrics are served from the start, so a worker waiting for Temporal shows
// its failing requests.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	m := NewMetrics(log)
	defer m.Close()
	if cfg.WorkerMetricsAddr != "" {
		stop, err := serveMetrics(cfg.WorkerMetricsAddr, m, log)
		if err != nil {
			return fmt.Errorf("BGCHECK_WORKER_METRICS_ADDR: %w", err)
		}
		defer stop()
	}
	secrets, err := secretbox.Parse(cfg.SecretsKeys())
	if err != nil {
		return fmt.Errorf("BGCHECK_SECRETS_KEY: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithSecrets(secrets))
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := dial(ctx, cfg, m.Temporal, log)
	if err != nil {
		return err
	}
	defer c.Close()

	w := New(c, &activities.Activities{
		DB:      db,
		HTTP:    activities.NewHTTPClient(cfg.AllowPrivateWebhookURLs),
		Log:     log,
		Metrics: m.Deliveries,
		Limits:  activities.NewInFlightLimits(cfg.WorkerEndpointConcurrency, cfg.WorkerAccountConcurrency),
	}, Options{Concurrency: cfg.WorkerConcurrency})
	if err := w.Start(); err != nil {
		return err
	}
	mailer, err := mail.New(cfg.SMTPURL, log)
	if err != nil {
		w.Stop()
		return fmt.Errorf("BGCHECK_SMTP_URL: %w", err)
	}
	checks := NewChecks(c, DomainActivities{
		Checks: &activities.Checks{
			DB: db, Mailer: mailer, PortalURL: cfg.PortalURL, Log: log,
			Sandbox: screening.NewSandbox(cmp.Or(cfg.SandboxSpeed, screening.DefaultSandboxSpeed)),
		},
		Adverse:  &activities.AdverseActions{DB: db, Mailer: mailer, PortalURL: cfg.PortalURL},
		Disputes: &activities.Disputes{DB: db, Mailer: mailer, PortalURL: cfg.PortalURL},
		Billing:  &activities.Billing{DB: db, Mailer: mailer, PortalURL: cfg.PortalURL},
		Health:   &activities.EndpointHealth{DB: db, Mailer: mailer, PortalURL: cfg.PortalURL},
		Recovery: &activities.Recoveries{DB: db},
		SSOMetadata: &activities.SSOMetadata{DB: db, HTTP: sso.NewHTTPClient(cfg.SSOPrivateNetworks),
			Allowed: cfg.SSOPrivateNetworks, Log: log.With("component", "sso-metadata")},
	})
	if err := checks.Start(); err != nil {
		w.Stop()
		return err
	}
	if err := EnsureInvoiceSchedule(ctx, c); err != nil {
		// Invoices wait, deliveries and checks need not: the next worker to start tries again.
		log.Error("could not create the monthly invoice schedule; invoices wait until a worker creates it", "err", err)
	}
	if err := EnsureSSOMetadataSchedule(ctx, c); err != nil {
		// Sign-ins go on with the stored metadata while it is valid: the next worker tries again.
		log.Error("could not create the SSO metadata schedule; SAML metadata is not refreshed until a worker creates it", "err", err)
	}
	defer checks.Stop()
	stopDispatch, err := dispatch(ctx, cfg, db, c, m, log)
	if err != nil {
		w.Stop()
		return err
	}
	log.Info("bgcheck-worker polling", "task_queue", workflows.TaskQueue, "concurrency", cfg.WorkerConcurrency,
		"per_endpoint", cfg.WorkerEndpointConcurrency, "per_account", cfg.WorkerAccountConcurrency)
	<-ctx.Done()
	log.Info("stopping: no new workflows, no new tasks; attempts in flight may finish")
	stopDispatch()
	w.Stop()
	return nil
}

// dispatch runs the outbox dispatcher and the reconciliation with Temporal in this process, on
// the worker's own client: a delivery workflow it starts begins on this process's worker at
// once (eager start). Every worker runs them; leases and an advisory lock share the work. The
// returned function stops both and waits for them.
func dispatch(ctx context.Context, cfg config.Config, db *postgres.DB, c client.Client, m *Metrics, log *slog.Logger) (stop func(), err error) {
	schedule, err := config.ParseSchedule(cfg.RetrySchedule)
	if err != nil {
		return nil, fmt.Errorf("BGCHECK_RETRY_SCHEDULE: %w", err)
	}
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d := dispatcher.New(db, c, dispatcher.Options{Schedule: schedule, Metrics: m.Dispatcher,
		EndpointDisableAfter: cfg.EndpointDisableAfter}, log.With("component", "dispatcher"))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.Run(dctx) }()
	go func() {
		defer wg.Done()
		dispatcher.NewReconciler(db, c, log.With("component", "reconciler")).Run(dctx, time.Minute)
	}()
	return func() { cancel(); wg.Wait() }, nil
}
