// Command delivery is the end-to-end delivery benchmark: how many events the API accepts, how
// long an event takes from the POST that creates it to the webhook receiver, and how many
// deliveries per second the whole pipeline (API and its dispatcher, Temporal, worker, PostgreSQL)
// sustains, all on this machine.
//
// Run it from the repository root (PostgreSQL must be reachable; set BGCHECK_TEMPORAL_BIN to a
// temporal CLI to skip building the pinned one):
//
//	go run ./tools/bench/delivery                        # in-memory Temporal dev server
//	go run ./tools/bench/delivery -disk                  # Temporal on SQLite in WAL mode
//	go run ./tools/bench/delivery -temporal postgres     # a Temporal cluster (temporal-server) on PostgreSQL
//	go run ./tools/bench/delivery -phases burst -burst 5000
//	go run ./tools/bench/delivery -temporal-dc system.forceSearchAttributesCacheRefreshOnRead=false
//
// It creates a throwaway database bgcheck_bench_<random> on BGCHECK_TEST_DATABASE_URL (default
// the local PostgreSQL), builds bgcheck-api, bgcheck-worker and bgcheckctl, bootstraps an account,
// starts the pinned Temporal dev server (package devtemporal), the API (with
// BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true, BGCHECK_LOG_LEVEL=warn and its rate limits off) and
// -workers workers as separate processes, and a receiver in this process that answers 204 and
// records when each event (X-Service-Event-Id) arrived. One endpoint, subscribed to "*", points
// at the receiver.
// Then, after a short warm-up, the phases named by -phases run in order:
//
//   - ingest: -c clients POST /api/v1/events/test back to back for -ingest-d (after
//     -ingest-warmup): events accepted per second and the POST's latency. Deliveries run
//     meanwhile and compete for the same cores, unless -ingest-alone stops the workers (and
//     with them the whole pipeline) for the phase.
//   - latency: an open-loop generator sends -rate events per second for -latency-d, each at its
//     scheduled time whether or not earlier POSTs have been answered, so a slow pipeline cannot
//     hide its latency by slowing the generator (coordinated omission). Latency is the time the
//     receiver got the event minus the time its POST was scheduled (and sent: the generator's lag
//     is reported), so it includes the API's own answer time. A breakdown per stage comes from
//     the database: created_at (the API made the event), dispatched_at (the dispatcher claimed
//     it), the first attempt's started_at (the worker began the POST).
//   - burst: -burst events are enqueued by -c clients as fast as the API takes them; the receive
//     rate is measured from the first receipt to the last, and over the middle 80% of receipts
//     (10th to 90th percentile), when the backlog is large and the pipeline runs flat out; also
//     after the dispatcher claimed the last delivery, when Temporal only runs workflows (while it
//     still starts them, starts take most of its time), and the CPU each delivery cost.
//   - steps: the open-loop generator runs at each rate of -steps for -step-d; a step is
//     sustainable when every event arrived within 5 s of the last send and p99 stayed within
//     -step-max-p99. The steps stop at the first that is not.
//
// After each open-loop run the histories of -trace-sample of its workflows, and of its slowest
// events, split Temporal's part of the latency by the history events' times.
//
// Between phases the benchmark waits until every accepted event has arrived, the database has
// no pending delivery and Temporal no running workflow (or -drain-timeout passes), so phases do
// not overlap. The phases share one Temporal server, which gets slower as completed workflows
// accumulate in it, so each phase reports how many it held before. At the end it checks that
// every accepted event arrived at least once (duplicate copies are counted), that no POST was
// refused and no delivery failed, counts retried attempts, and reads a few workflow histories to
// count their events.
//
// Every process's CPU is accounted per phase from /proc, in cores: the Temporal server, the API,
// the workers, the PostgreSQL backends of the API's pool and of the workers' (told apart by
// application_name), the rest of PostgreSQL (background writers, autovacuum, this program's
// connection), this program (load generator and receiver), and other work on the machine, which
// disturbs the figures when it is more than a few hundredths of a core.
//
// Everything listens on and talks to 127.0.0.1 only. Each phase is bounded in time. Whatever
// was started is stopped, and the database dropped, also on error or Ctrl-C (-keep leaves the
// database and the logs for inspection). The output is a table, then one JSON line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"
)

// options are the settings of one benchmark run.
type options struct {
	clients       int
	timeout       time.Duration
	eventType     string
	phases        []string
	warmupEvents  int
	ingestWarmup  time.Duration
	ingestDur     time.Duration
	ingestAlone   bool
	rate          float64
	latencyDur    time.Duration
	burst         int
	steps         []float64
	stepDur       time.Duration
	stepMaxP99    time.Duration
	drainTimeout  time.Duration
	disk          bool
	temporal      string
	workers       int
	endpoints     int
	keep          bool
	apiEnv        benchkit.EnvFlag
	workerEnv     benchkit.EnvFlag
	temporalDC    benchkit.EnvFlag
	dbParams      benchkit.EnvFlag
	historySample int
	traceSample   int
}

var allPhases = []string{"ingest", "latency", "burst", "steps"}

func main() {
	o := options{}
	var phases, steps string
	flag.IntVar(&o.clients, "c", 16, "concurrent clients of the ingest and burst phases")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Second, "timeout of one POST")
	flag.StringVar(&o.eventType, "type", "check.completed", "event type sent (its sample data is the payload)")
	flag.StringVar(&phases, "phases", strings.Join(allPhases, ","), "phases to run, in this order: "+strings.Join(allPhases, ","))
	flag.IntVar(&o.warmupEvents, "warmup-events", 100, "events sent and delivered before the first phase, not recorded")
	flag.DurationVar(&o.ingestWarmup, "ingest-warmup", time.Second, "ingest: warm-up, not recorded")
	flag.DurationVar(&o.ingestDur, "ingest-d", 5*time.Second, "ingest: measured duration")
	flag.BoolVar(&o.ingestAlone, "ingest-alone", false, "ingest: stop the workers (SIGSTOP) while the API takes the events, so the API and PostgreSQL have the machine")
	flag.Float64Var(&o.rate, "rate", 50, "latency: events per second")
	flag.DurationVar(&o.latencyDur, "latency-d", 30*time.Second, "latency: duration")
	flag.IntVar(&o.burst, "burst", 4000, "burst: events enqueued")
	flag.StringVar(&steps, "steps", "75,100,125,150,200", "steps: open-loop rates (events/s), tried in order after -rate")
	flag.DurationVar(&o.stepDur, "step-d", 20*time.Second, "steps: duration of each rate")
	flag.DurationVar(&o.stepMaxP99, "step-max-p99", time.Second, "steps: highest p99 of a sustainable rate")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 3*time.Minute, "longest wait for the backlog to drain after a phase")
	flag.BoolVar(&o.disk, "disk", false, "the same as -temporal disk")
	flag.StringVar(&o.temporal, "temporal", "dev", "dev (the CLI's dev server in memory), disk (on an SQLite file in WAL mode, as make dev runs it), "+
		"server (temporal-server on SQLite in memory, visibility in a database of its own) "+
		"or postgres (temporal-server on the benchmark's PostgreSQL, in throwaway databases; its PostgreSQL work counts in the machine's CPU, not Temporal's)")
	flag.IntVar(&o.workers, "workers", 1, "bgcheck-worker processes")
	flag.IntVar(&o.endpoints, "endpoints", 1, "webhook endpoints, each subscribed to every event: deliveries per event")
	flag.BoolVar(&o.keep, "keep", false, "keep the database, the binaries and the logs for inspection")
	flag.Var(&o.apiEnv, "api-env", "extra NAME=VALUE for the API process's environment (repeatable)")
	flag.Var(&o.workerEnv, "worker-env", "extra NAME=VALUE for the workers' environment, e.g. BGCHECK_WORKER_CONCURRENCY=50 (repeatable)")
	flag.Var(&o.temporalDC, "temporal-dc", "dynamic config KEY=JSON for the Temporal dev server, over devtemporal.Tuned (repeatable; KEY= removes one)")
	flag.Var(&o.dbParams, "db-param", "PostgreSQL setting NAME=VALUE for the API's and workers' connections, e.g. synchronous_commit=off (repeatable)")
	flag.IntVar(&o.historySample, "history-sample", 5, "workflow histories read at the end to count their events")
	flag.IntVar(&o.traceSample, "trace-sample", 100, "workflow histories read after each open-loop run to time Temporal's stages")
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "delivery: unexpected argument %q\n", flag.Arg(0))
		usage()
		os.Exit(2)
	}
	var err error
	if o.phases, err = parsePhases(phases); err == nil {
		o.steps, err = parseRates(steps)
	}
	if err == nil {
		err = o.validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "delivery:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delivery:", err)
		stop()
		os.Exit(1)
	}
}

func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: go run ./tools/bench/delivery [flags]\n\n")
	flag.PrintDefaults()
}

func parsePhases(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(allPhases, p) {
			return nil, fmt.Errorf("-phases: unknown phase %q (want some of %s)", p, strings.Join(allPhases, ","))
		}
		out = append(out, p)
	}
	return out, nil
}

func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		r, err := strconv.ParseFloat(f, 64)
		if err != nil || r <= 0 {
			return nil, fmt.Errorf("-steps: %q is not a positive rate", f)
		}
		out = append(out, r)
	}
	return out, nil
}

func (o options) validate() error {
	switch {
	case o.clients < 1:
		return errors.New("-c must be at least 1")
	case o.timeout <= 0:
		return errors.New("-timeout must be positive")
	case o.ingestDur <= 0 || o.ingestWarmup < 0:
		return errors.New("-ingest-d must be positive and -ingest-warmup not negative")
	case o.rate <= 0 || o.latencyDur <= 0:
		return errors.New("-rate and -latency-d must be positive")
	case o.burst < 10:
		return errors.New("-burst must be at least 10")
	case o.stepDur <= 0 || o.stepMaxP99 <= 0:
		return errors.New("-step-d and -step-max-p99 must be positive")
	case o.drainTimeout <= 0:
		return errors.New("-drain-timeout must be positive")
	case o.workers < 1:
		return errors.New("-workers must be at least 1")
	case o.warmupEvents < 0:
		return errors.New("-warmup-events must not be negative")
	}
	return nil
}

// dynamicConfig is the -temporal-dc flags as devstack's changes to the dynamic config make dev
// and the end-to-end tests run Temporal with (devtemporal.Tuned): an empty value removes a
// setting.
func dynamicConfig(e benchkit.EnvFlag) map[string]string {
	m := map[string]string{}
	for _, kv := range e {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s delivery: "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run sets the stack up, runs the phases, checks the outcome and prints the report. Whatever it
// started is stopped, and the database dropped, before it returns.
func run(ctx context.Context, o options, stdout *os.File) error {
	st, err := setUp(ctx, o)
	if st != nil {
		defer st.tearDown()
	}
	if err != nil {
		return err
	}
	rep := newReport(o)
	b := &bench{o: o, st: st, rep: rep}
	if err := b.runPhases(ctx); err != nil {
		// Print what was measured before the error.
		rep.printTable(stdout)
		return err
	}
	rep.printTable(stdout)
	if err := rep.printJSON(stdout); err != nil {
		return err
	}
	if !rep.Verify.OK {
		return errors.New("verification failed: " + rep.Verify.Problem)
	}
	return nil
}
