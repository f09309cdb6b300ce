// Command loadapi is the load benchmark of GET /api/v1/webhooks/endpoints: requests per second and
// latency percentiles of the real bgcheck-api, printed beside those of a bare chi handler that
// answers the same path with a fixed body of the same bytes, measured on the same machine in the
// same run. The baseline tells how much of the figure is the API (middleware, key check, one
// PostgreSQL query, JSON encoding) and how much is Go's HTTP stack, the loopback and the client.
//
// Run it from the repository root (PostgreSQL must be reachable; nothing else is needed):
//
//	go run ./tools/bench/loadapi                          # 32 workers, 2s warm-up, 10s measured
//	go run ./tools/bench/loadapi -c 64 -d 20s
//	go run ./tools/bench/loadapi -api-log-level warn      # without the per-request access log
//
// It creates a throwaway database bgcheck_load_<random> on BGCHECK_TEST_DATABASE_URL (default the
// local PostgreSQL), builds bgcheck-api and bgcheckctl, bootstraps an account with bgcheckctl,
// starts bgcheck-api on a free 127.0.0.1 port, creates ten webhook endpoints through it, and
// starts the bare server (this program re-executed with -serve-bare). Each target, bare first,
// then gets C workers sharing one keep-alive transport, a warm-up whose requests are not
// recorded, and a measured window; a non-200 answer counts as an error. The servers are stopped
// and the database dropped at the end, also on error or Ctrl-C (-keep leaves the database and
// the API's log for inspection).
//
// Output: a table, then one JSON line for machines. The load generator, both servers and
// PostgreSQL share the machine's cores, so a figure is a figure of this machine with the client
// competing for CPU, not the server's ceiling. The cpu columns say who used the cores in the
// window: the server, the PostgreSQL backends of the API's pool, this client, and other work on
// the machine; a run whose "other" is more than a few hundredths was disturbed, so run it again.
// The API's rate limits are turned off for this run (BGCHECK_RATE_LIMIT_*=off), since 32 clients
// with one key would spend the platform budget of 120 per minute in a moment; -api-env
// BGCHECK_RATE_LIMIT_PLATFORM=1000000000/1m measures with the limiter counting but never refusing.
//
// -limit-check checks the limiter instead: -c clients (say 200) send GETs with one key for one
// window of -limit (default 120/1m, the platform class's default) to -instances API processes
// (several share their counters in Redis: -redis redis://127.0.0.1:6379/0), and the run passes
// when exactly the limit got 200, the rest 429 with the X-RateLimit-* headers and Retry-After,
// and a request after the window passes again:
//
//	go run ./tools/bench/loadapi -limit-check -c 200
//	go run ./tools/bench/loadapi -limit-check -c 200 -instances 2 -redis redis://127.0.0.1:6379/0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/internal/dev/devstack"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"
)

// options are the settings of one benchmark run.
type options struct {
	concurrency  int
	duration     time.Duration
	warmup       time.Duration
	timeout      time.Duration
	endpoints    int
	keep         bool
	apiLogLevel  string
	poolMaxConns int
	apiEnv       benchkit.EnvFlag

	limitCheck bool
	limit      string
	instances  int
	redisURL   string
}

func main() {
	var o options
	flag.IntVar(&o.concurrency, "c", 32, "concurrent workers, each keeping its own connection alive")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "measured duration per target")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up per target, not recorded")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Second, "timeout of one request")
	flag.IntVar(&o.endpoints, "endpoints", 10, "webhook endpoints to create before the run")
	flag.BoolVar(&o.keep, "keep", false, "keep the database and the API's log for inspection")
	flag.StringVar(&o.apiLogLevel, "api-log-level", "info", "BGCHECK_LOG_LEVEL of the API process (info writes one access-log line per request)")
	flag.IntVar(&o.poolMaxConns, "pool-max-conns", 0, "pool_max_conns added to the API's DATABASE_URL (0: the pgxpool default)")
	flag.Var(&o.apiEnv, "api-env", "extra NAME=VALUE for the API process's environment (repeatable)")
	flag.BoolVar(&o.limitCheck, "limit-check", false, "check the platform rate limit instead of measuring throughput (see -limit, -instances, -redis)")
	flag.StringVar(&o.limit, "limit", "120/1m", "with -limit-check: the platform limit to check, N/duration")
	flag.IntVar(&o.instances, "instances", 1, "with -limit-check: API processes sharing the load (more than one needs -redis)")
	flag.StringVar(&o.redisURL, "redis", "", "with -limit-check: BGCHECK_REDIS_URL of the API processes")
	serveBareAddr := flag.String("serve-bare", "", "") // internal: run as the bare baseline server
	bareBody := flag.String("bare-body", "", "")       // internal: the file the bare server answers with
	flag.Usage = usage
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "loadapi: unexpected argument %q\n", flag.Arg(0))
		usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *serveBareAddr != "" {
		err = serveBare(ctx, *serveBareAddr, *bareBody)
	} else {
		err = run(ctx, o, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadapi:", err)
		stop()
		os.Exit(1)
	}
}

// usage prints the flags a person uses, not the internal ones (those with no usage text).
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "usage: go run ./tools/bench/loadapi [flags]\n\n")
	flag.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		fmt.Fprintf(out, "  -%s (default %q)\n    \t%s\n", f.Name, f.DefValue, f.Usage)
	})
}

func (o options) validate() error {
	switch {
	case o.concurrency < 1:
		return errors.New("-c must be at least 1")
	case o.duration <= 0:
		return errors.New("-d must be positive")
	case o.warmup < 0:
		return errors.New("-warmup must not be negative")
	case o.timeout <= 0:
		return errors.New("-timeout must be positive")
	case o.endpoints < 1:
		return errors.New("-endpoints must be at least 1")
	case o.instances < 1:
		return errors.New("-instances must be at least 1")
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadapi: "+format+"\n", args...)
}

// run sets up the database and both servers, loads each target in turn and prints the report.
// Whatever it started is stopped, and the database dropped, before it returns.
func run(ctx context.Context, o options, stdout io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bgcheck-loadapi-")
	if err != nil {
		return err
	}
	defer func() {
		if o.keep {
			logf("kept %s (binaries, api.log)", work)
			return
		}
		_ = os.RemoveAll(work)
	}()

	logf("building bgcheck-api")
	if err := devstack.Build(ctx, work, "bgcheck-api"); err != nil {
		return err
	}
	// The database and the account; no Temporal: listing endpoints does not ask it.
	dev, err := devstack.Start(ctx, devstack.Options{Dir: work, DatabasePrefix: "bgcheck_load_", Temporal: devstack.TemporalNone,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Keep: o.keep})
	if err != nil {
		return err
	}
	defer dev.Close()
	dbURL, dbName, key := dev.DatabaseURL, dev.DatabaseName, dev.TestKey
	if o.limitCheck {
		return limitCheck(ctx, o, stdout, work, dev)
	}

	apiAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	apiDBURL, err := withPoolMaxConns(dbURL, o.poolMaxConns)
	if err != nil {
		return err
	}
	apiLogPath := filepath.Join(work, "api.log")
	apiLog, err := os.Create(apiLogPath)
	if err != nil {
		return err
	}
	defer apiLog.Close()
	// The limits are off unless -api-env sets them (the last of repeated names wins).
	env := append([]string{"DATABASE_URL=" + apiDBURL, "BGCHECK_HTTP_ADDR=" + apiAddr, "BGCHECK_LOG_LEVEL=" + o.apiLogLevel,
		"BGCHECK_RATE_LIMIT_AUTH=off", "BGCHECK_RATE_LIMIT_CONSUMER=off", "BGCHECK_RATE_LIMIT_PLATFORM=off"}, o.apiEnv...)
	api, err := devstack.StartProcess("bgcheck-api", filepath.Join(work, "bgcheck-api"), nil, append(dev.Environ(), env...), apiLog)
	if err != nil {
		return err
	}
	defer api.Stop(25 * time.Second) // the API allows itself 20
	// /healthz, not /readyz: the API serves only once its database is migrated, and readiness
	// would also ask for Temporal, which this benchmark does not need.
	if err := api.WaitReady(ctx, "http://"+apiAddr+"/healthz", nil); err != nil {
		return fmt.Errorf("%w\n%s", err, benchkit.Tail(apiLogPath, 2000))
	}
	apiURL := "http://" + apiAddr + "/api/v1/webhooks/endpoints"
	body, err := seedEndpoints(ctx, apiURL, key, o.endpoints)
	if err != nil {
		return err
	}
	bodyPath := filepath.Join(work, "bare-body.json")
	if err := os.WriteFile(bodyPath, body, 0o600); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return err
	}
	bareAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	bare, err := devstack.StartProcess("bare-chi", self, []string{"-serve-bare", bareAddr, "-bare-body", bodyPath}, nil, os.Stderr)
	if err != nil {
		return err
	}
	defer bare.Stop(25 * time.Second)
	bareURL := "http://" + bareAddr + "/api/v1/webhooks/endpoints"
	if err := bare.WaitReady(ctx, bareURL, nil); err != nil {
		return err
	}

	targets := []target{
		{name: "bare-chi", url: bareURL, pid: bare.PID()},
		{name: "bgcheck-api", url: apiURL, header: http.Header{"X-Api-Key": {key}}, pid: api.PID()},
	}
	for i := range targets {
		targets[i].dbPIDs = func(ctx context.Context) []int { return backendPIDs(ctx, pgtest.ServerURL(), dbName) }
	}
	var results []result
	for _, t := range targets {
		logf("%s: %d workers, %s warm-up, %s measured", t.name, o.concurrency, o.warmup, o.duration)
		r, err := runLoad(ctx, t, o)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		results = append(results, r)
	}
	rep := newReport(o, len(body), results)
	rep.printTable(stdout)
	return rep.printJSON(stdout)
}

// withPoolMaxConns sets pool_max_conns, which pgxpool reads from the URL, when n > 0.
func withPoolMaxConns(dbURL string, n int) (string, error) {
	if n <= 0 {
		return dbURL, nil
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
