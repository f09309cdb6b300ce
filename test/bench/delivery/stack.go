package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck/test/bench/internal/benchkit"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/workflows"
)

// Application names the API's and the workers' connections carry, so their backends' CPU can be
// told apart in pg_stat_activity.
const (
	appAPI    = "bgcheck-api"
	appWorker = "bgcheck-worker"
	appBench  = "bgcheck-bench"
)

// stack is everything one run started: delete it with tearDown.
type stack struct {
	o        options
	work     string
	dbURL    string
	dbName   string
	dropDB   func() error
	db       *pgxpool.Pool // this program's connections to the benchmark database
	temporal *devtemporal.Server
	tpid     int // the Temporal server's process
	tc       client.Client
	rc       *receiver
	api      *child
	workers  []*child
	apiBase  string
	key      string
	meter    *meter
	cleanups []func()
}

// setUp builds and starts everything; on error the returned stack (if not nil) holds what was
// started and must still be torn down.
func setUp(ctx context.Context, o options) (*stack, error) {
	st := &stack{o: o}
	var err error
	if st.work, err = os.MkdirTemp("", "bgcheck-bench-delivery-"); err != nil {
		return nil, err
	}
	st.cleanups = append(st.cleanups, func() {
		if o.keep {
			logf("kept %s (binaries and logs)", st.work)
			return
		}
		_ = os.RemoveAll(st.work)
	})

	if st.dbURL, st.dbName, st.dropDB, err = benchkit.CreateDatabase(ctx, pgtest.ServerURL(), "bgcheck_bench_"); err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, func() {
		if o.keep {
			logf("kept the database: DATABASE_URL=%s", st.dbURL)
			return
		}
		if err := st.dropDB(); err != nil {
			logf("drop the database %s: %v", st.dbName, err)
		}
	})
	logf("database %s", st.dbName)

	logf("building bgcheck-api, bgcheck-worker and bgcheckctl")
	if err := buildBinaries(ctx, st.work); err != nil {
		return st, err
	}
	if st.key, err = bootstrap(ctx, filepath.Join(st.work, "bgcheckctl"), st.dbURL); err != nil {
		return st, err
	}
	if st.db, err = pgxpool.New(ctx, withParams(st.dbURL, appBench, nil)); err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.db.Close)

	if err := st.startTemporal(ctx); err != nil {
		return st, err
	}
	if st.rc, err = newReceiver(); err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.rc.close)

	common := []string{
		"TEMPORAL_ADDRESS=" + st.temporal.Address, "TEMPORAL_NAMESPACE=" + devtemporal.Namespace,
		"BGCHECK_ENV=development", "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true", "BGCHECK_LOG_LEVEL=warn",
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return st, err
	}
	// The benchmark measures the pipeline, not the rate limiter: every class is off (-api-env can
	// set them again; the last value of a variable wins).
	env := append([]string{"DATABASE_URL=" + withParams(st.dbURL, appAPI, o.dbParams), "BGCHECK_HTTP_ADDR=" + apiAddr,
		"BGCHECK_RATE_LIMIT_AUTH=off", "BGCHECK_RATE_LIMIT_CONSUMER=off", "BGCHECK_RATE_LIMIT_PLATFORM=off"}, common...)
	env = append(env, o.apiEnv...)
	if st.api, err = st.startChild("bgcheck-api", "bgcheck-api", env); err != nil {
		return st, err
	}
	st.apiBase = "http://" + apiAddr
	if err := st.api.waitReady(ctx, st.apiBase+"/readyz"); err != nil {
		return st, fmt.Errorf("%w\n%s", err, tail(st.api.logPath, 3000))
	}
	for i := range o.workers {
		// Each worker's metrics on a port of its own, so several workers can run side by side.
		env := append(append([]string{"DATABASE_URL=" + withParams(st.dbURL, appWorker, o.dbParams),
			"BGCHECK_WORKER_METRICS_ADDR=127.0.0.1:0"}, common...), o.workerEnv...)
		w, err := st.startChild("bgcheck-worker-"+strconv.Itoa(i+1), "bgcheck-worker", env)
		if err != nil {
			return st, err
		}
		st.workers = append(st.workers, w)
	}

	for i := range max(1, o.endpoints) {
		secret, err := st.createEndpoint(ctx, st.rc.url(i))
		if err != nil {
			return st, err
		}
		st.rc.addEndpoint(secret)
	}

	st.meter = newMeter(st.db, st.dbName)
	st.meter.setProcess(st.tpid, groupTemporal)
	st.meter.rssPID = st.tpid
	st.meter.setProcess(st.api.pid(), groupAPI)
	for _, w := range st.workers {
		st.meter.setProcess(w.pid(), groupWorker)
	}
	st.meter.setProcess(os.Getpid(), groupBench)
	stopMeter := st.meter.start()
	st.cleanups = append(st.cleanups, stopMeter)
	return st, nil
}

// tearDown stops what setUp started, in reverse order: the meter, the workers, the API, Temporal,
// the receiver; then drops the database and removes the work directory.
func (st *stack) tearDown() {
	var stops []*child
	stops = append(stops, st.workers...)
	if st.api != nil {
		stops = append(stops, st.api)
	}
	for _, c := range stops {
		c.stop()
	}
	if st.tc != nil {
		st.tc.Close()
	}
	if st.temporal != nil {
		st.temporal.Stop()
	}
	for i := len(st.cleanups) - 1; i >= 0; i-- {
		st.cleanups[i]()
	}
}

// startTemporal starts the pinned dev server with the workflows' search attributes, in memory or
// on an SQLite file in the work directory, and finds its process for the CPU accounting.
func (st *stack) startTemporal(ctx context.Context) error {
	opts := devtemporal.Options{
		SearchAttributes: workflows.SearchAttributes,
		DynamicConfig:    st.o.temporalDC.dynamicConfig(),
		LogFile:          filepath.Join(st.work, "temporal.log"),
		Logger:           slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	mode := "the Temporal dev server in memory"
	switch {
	case st.o.temporal == "postgres":
		pg, err := st.temporalDatabases(ctx)
		if err != nil {
			return err
		}
		opts.Postgres = pg
		mode = "a Temporal cluster (temporal-server) on PostgreSQL, databases " + pg.Database + "{,_visibility}"
	case st.o.temporal != "dev":
		return fmt.Errorf("-temporal %q: dev or postgres", st.o.temporal)
	case st.o.disk:
		opts.DBFile = filepath.Join(st.work, "temporal.db")
		mode = "the Temporal dev server on disk, SQLite WAL: " + opts.DBFile
	}
	logf("starting %s", mode)
	srv, err := devtemporal.Start(ctx, opts)
	if err != nil {
		return err
	}
	st.temporal = srv
	if st.tpid, err = temporalPID(); err != nil {
		return err
	}
	st.tc, err = client.DialContext(ctx, client.Options{
		HostPort: srv.Address, Namespace: devtemporal.Namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	return err
}

// temporalDatabases names a pair of throwaway databases for a cluster on the benchmark's
// PostgreSQL (devtemporal creates them), dropped at the end unless -keep.
func (st *stack) temporalDatabases(ctx context.Context) (*devtemporal.Postgres, error) {
	server, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		return nil, err
	}
	pg := &devtemporal.Postgres{Address: server.Host, User: server.User.Username(), Database: st.dbName + "_temporal"}
	pg.Password, _ = server.User.Password()
	if !st.o.keep {
		st.cleanups = append(st.cleanups, func() {
			conn, err := pgx.Connect(context.Background(), pgtest.ServerURL())
			if err != nil {
				return
			}
			defer conn.Close(context.Background())
			for _, db := range []string{pg.Database, pg.VisibilityDatabase()} {
				_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
			}
		})
	}
	return pg, nil
}

// temporalPID finds the dev server among this process's children: devtemporal starts it as one
// and keeps the process to itself. It is the only child when this runs.
func temporalPID() (int, error) {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("find the Temporal server's process: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, ppid, ok := procParent(pid)
		if ok && ppid == self && strings.HasPrefix(comm, "temporal") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("find the Temporal server's process: no child of %d named temporal*", self)
}

// procParent reads a process's command name and parent from /proc/<pid>/stat.
func procParent(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:]) // f[0] state, f[1] ppid
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, err == nil
}

// withParams adds application_name and the given NAME=VALUE settings to a database URL; pgx sends
// query parameters it does not know as run-time settings when it connects.
func withParams(dbURL, app string, params []string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	q := u.Query()
	q.Set("application_name", app)
	for _, p := range params {
		k, v, _ := strings.Cut(p, "=")
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// buildBinaries builds the real commands into dir, by import path, so the benchmark measures the
// module it is run from (a scratch copy included).
func buildBinaries(ctx context.Context, dir string) error {
	return benchkit.BuildService(ctx, dir, "bgcheck-api", "bgcheck-worker", "bgcheckctl")
}

// bootstrap migrates the database and creates the account with bgcheckctl, and returns its test
// key.
func bootstrap(ctx context.Context, ctl, dbURL string) (string, error) {
	cmd := exec.CommandContext(ctx, ctl, "bootstrap", "--account", "Delivery benchmark",
		"--admin-email", "bench@example.com", "--admin-password", "bench-password")
	cmd.Env = append(os.Environ(), "BGCHECK_ENV=development", "DATABASE_URL="+dbURL, "BGCHECK_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("bgcheckctl bootstrap: %w", err)
	}
	var res struct {
		TestKey string `json:"test_key"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.TestKey == "" {
		return "", fmt.Errorf("bgcheckctl bootstrap: no test_key in %q", out)
	}
	return res.TestKey, nil
}

// createEndpoint subscribes url (one of the receiver's) to every event type and returns the
// endpoint's secret.
func (st *stack) createEndpoint(ctx context.Context, url string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"url": url, "events": []string{"*"}, "description": "delivery benchmark receiver",
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.apiBase+"/api/v1/webhooks/endpoints", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-Key", st.key)
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("create endpoint: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &ep) != nil || ep.Secret == "" {
		return "", fmt.Errorf("create endpoint: status %d: %.300s", resp.StatusCode, raw)
	}
	return ep.Secret, nil
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// tail returns the last n bytes of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
