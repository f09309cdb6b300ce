package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

// BenchmarkChecksInFlight measures checks completed per second with 1,000 checks in flight and
// the sandbox at full speed (every delay a nanosecond; the workflow still sleeps at least a
// second per pending answer), on one Temporal dev server, PostgreSQL, the API and one worker in
// this process; and how many test events a second reach a receiver alone, and while the checks
// run (each check's own three events are delivered too). Run it once:
//
//	go test ./test/e2e -run '^$' -bench ChecksInFlight -benchtime 1x
func BenchmarkChecksInFlight(b *testing.B) {
	const checks, events = 1000, 1000
	s := newStack(b, 0)
	s.cfg.SandboxSpeed = 1e12
	s.cfg.LogLevel = "warn"
	s.startAPI()
	s.startWorker()
	var delivered atomic.Int64
	rc := newReceiver(b, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Service-Event-Type") == webhook.EventCandidateUpdated {
			delivered.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.createEndpoint(rc.URL + "/hooks")
	ctx := context.Background()
	var acct string
	if err := s.db.Pool().QueryRow(ctx, `SELECT id FROM accounts LIMIT 1`).Scan(&acct); err != nil {
		b.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeTest}

	// deliveryRate sends n events (candidate.updated, written directly) and returns deliveries
	// per second until all have reached the receiver.
	deliveryRate := func(n int) float64 {
		start, base := time.Now(), delivered.Load()
		for i := range n {
			if _, err := s.db.CreateEvent(ctx, tn, webhook.EventCandidateUpdated, map[string]any{"i": i}); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, 10*time.Minute, "the events' deliveries", func() bool { return delivered.Load()-base >= int64(n) })
		return float64(n) / time.Since(start).Seconds()
	}
	alone := deliveryRate(events)

	// 1,000 checks of the basic package, their candidates linked to one consumer who consents.
	var user string
	if err := s.db.Pool().QueryRow(ctx, `INSERT INTO users (id, email, role) VALUES ($1, 'bench@example.com', 'consumer') RETURNING id`,
		bgcheck.NewID(bgcheck.PrefixUser)).Scan(&user); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, checks)
	for i := range checks {
		c, err := s.db.CreateCandidate(ctx, tn, bgcheck.Candidate{FirstName: "Bench", LastName: fmt.Sprint(i), Email: ptr(fmt.Sprintf("c%d@example.com", i))})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.db.Pool().Exec(ctx, `INSERT INTO candidate_users (candidate_id, user_id) VALUES ($1, $2)`, c.ID, user); err != nil {
			b.Fatal(err)
		}
		chk, err := s.db.CreateCheck(ctx, tn, postgres.NewCheck{CandidateID: c.ID, Package: "basic",
			Screenings: []string{"ssn_trace", "national_criminal"}, InvitationTTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = chk.ID
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if _, err := s.db.AuthorizeCheck(ctx, user, id, postgres.CandidateDetails{SSN: "111112001", Address: "1 Main St"}, "2001"); err != nil {
				b.Error(err) // fails the benchmark at once below, rather than waiting for checks that never run
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	beside := deliveryRate(events)
	waitFor(b, 20*time.Minute, "every check to complete", func() bool {
		var n int
		_ = s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM checks WHERE status = 'complete'`).Scan(&n)
		return n == checks
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(checks)/elapsed.Seconds(), "checks/s")
	b.ReportMetric(alone, "deliveries/s-alone")
	b.ReportMetric(beside, "deliveries/s-beside-checks")
	b.Logf("%d checks complete in %s (%.1f/s); deliveries %.1f/s alone, %.1f/s while the checks ran (%.0f%%)",
		checks, elapsed.Round(time.Millisecond), float64(checks)/elapsed.Seconds(), alone, beside, 100*beside/alone)
}

func ptr[T any](v T) *T { return &v }
