// Package retention prunes old records on a schedule, in the API process: postgres.Prune does the
// deleting and keeps two instances from doing it at once; this package decides when, and logs
// what went.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/bgcheck/bgcheck/postgres"
)

// DefaultInterval is how often a Runner prunes: the records it deletes are counted in days, so
// once a day keeps each run to about a day's worth.
const DefaultInterval = 24 * time.Hour

// DefaultFirstRun is how long after start a Runner first prunes: soon, so a deployment that
// restarts more often than daily still prunes, but not at once, so a start (or a crash loop) is
// not slowed by a long first run.
const DefaultFirstRun = time.Minute

// Pruner deletes what a policy no longer keeps; *postgres.DB is one.
type Pruner interface {
	Prune(ctx context.Context, p postgres.RetentionPolicy) (postgres.PruneResult, error)
}

// Runner prunes with one policy, first after FirstRun and then at every interval.
type Runner struct {
	pruner Pruner
	policy postgres.RetentionPolicy
	log    *slog.Logger
	// FirstRun is the wait before the first run; New sets DefaultFirstRun.
	FirstRun time.Duration
}

// New returns a Runner that prunes with policy.
func New(pruner Pruner, policy postgres.RetentionPolicy, log *slog.Logger) *Runner {
	return &Runner{pruner: pruner, policy: policy, log: log, FirstRun: DefaultFirstRun}
}

// Run prunes until ctx is done; a run in progress is canceled with it. A failed run is logged
// and tried again at the next interval: what it left is still there to delete.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	timer := time.NewTimer(r.FirstRun)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		r.runOnce(ctx)
		timer.Reset(interval)
	}
}

func (r *Runner) runOnce(ctx context.Context) {
	start := time.Now()
	res, err := r.pruner.Prune(ctx, r.policy)
	switch {
	case err != nil && ctx.Err() != nil:
		r.log.Info("retention: run interrupted by shutdown", "events", res.Events)
	case err != nil:
		r.log.Error("retention: prune failed", "err", err, "events", res.Events)
	case res.Skipped:
		r.log.Info("retention: another instance is pruning; skipped")
	default:
		r.log.Info("retention: pruned", "events", res.Events, "deliveries", res.Deliveries, "attempts", res.Attempts,
			"sessions", res.Sessions, "refresh_tokens", res.RefreshTokens, "magic_links", res.MagicLinks, "idempotency_keys", res.IdempotencyKeys,
			"event_retention", r.policy.Events.String(), "took", time.Since(start).Round(time.Millisecond))
	}
}
