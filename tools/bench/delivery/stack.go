package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/bgcheck/bgcheck/internal/dev/devstack"
	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"
)

// Application names the API's and the workers' connections carry, so their backends' CPU can be
// told apart in pg_stat_activity.
const (
	appAPI    = "bgcheck-api"
	appWorker = "bgcheck-worker"
	appBench  = "bgcheck-bench"
)

// stack is everything one run started: the database, Temporal and the account from devstack (as
// the end-to-end tests get theirs), the API and the workers as processes of their own, and this
// program's receiver. Delete it with tearDown.
type stack struct {
	o        options
	work     string
	dev      *devstack.Stack
	db       *pgxpool.Pool // this program's connections to the benchmark database
	tc       client.Client
	rc       *receiver
	api      *devstack.Process
	workers  []*devstack.Process
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

	logf("building bgcheck-api and bgcheck-worker")
	if err := devstack.Build(ctx, st.work, "bgcheck-api", "bgcheck-worker"); err != nil {
		return st, err
	}
	kind := o.temporal
	if kind == devstack.TemporalMemory && o.disk {
		kind = devstack.TemporalDisk
	}
	logf("starting the database and Temporal (%s)", kind)
	st.dev, err = devstack.Start(ctx, devstack.Options{
		Dir: st.work, DatabasePrefix: "bgcheck_bench_", Temporal: kind, DynamicConfig: dynamicConfig(o.temporalDC),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Keep: o.keep,
	})
	if err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.dev.Close)
	st.key = st.dev.TestKey
	logf("database %s", st.dev.DatabaseName)
	if st.db, err = pgxpool.New(ctx, withParams(st.dev.DatabaseURL, appBench, nil)); err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.db.Close)
	st.tc, err = client.DialContext(ctx, client.Options{
		HostPort: st.dev.TemporalAddress, Namespace: st.dev.Config().TemporalNamespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.tc.Close)
	if st.rc, err = newReceiver(); err != nil {
		return st, err
	}
	st.cleanups = append(st.cleanups, st.rc.close)

	if err := st.startServices(ctx); err != nil {
		return st, err
	}
	for i := range max(1, o.endpoints) {
		secret, err := st.createEndpoint(ctx, st.rc.url(i))
		if err != nil {
			return st, err
		}
		st.rc.addEndpoint(secret)
	}

	st.meter = newMeter(st.db, st.dev.DatabaseName)
	st.meter.setProcess(st.dev.Temporal.PID(), groupTemporal)
	st.meter.rssPID = st.dev.Temporal.PID()
	st.meter.setProcess(st.api.PID(), groupAPI)
	for _, w := range st.workers {
		st.meter.setProcess(w.PID(), groupWorker)
	}
	st.meter.setProcess(os.Getpid(), groupBench)
	st.cleanups = append(st.cleanups, st.meter.start())
	return st, nil
}

// startServices starts the API (its rate limits off: the benchmark measures the pipeline, not the
// limiter; -api-env can set them again, the last value of a variable winning) and -workers
// workers, each with its metrics on a port of its own.
func (st *stack) startServices(ctx context.Context) error {
	common := append(st.dev.Environ(), "BGCHECK_LOG_LEVEL=warn")
	apiAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	env := append(common, "DATABASE_URL="+withParams(st.dev.DatabaseURL, appAPI, st.o.dbParams), "BGCHECK_HTTP_ADDR="+apiAddr,
		"BGCHECK_RATE_LIMIT_AUTH=off", "BGCHECK_RATE_LIMIT_CONSUMER=off", "BGCHECK_RATE_LIMIT_PLATFORM=off")
	if st.api, err = st.startProcess("bgcheck-api", "bgcheck-api", append(env, st.o.apiEnv...)); err != nil {
		return err
	}
	st.apiBase = "http://" + apiAddr
	if err := st.api.WaitReady(ctx, st.apiBase+"/readyz", nil); err != nil {
		return fmt.Errorf("%w\n%s", err, benchkit.Tail(filepath.Join(st.work, "bgcheck-api.log"), 3000))
	}
	for i := range st.o.workers {
		env := append(common, "DATABASE_URL="+withParams(st.dev.DatabaseURL, appWorker, st.o.dbParams), "BGCHECK_WORKER_METRICS_ADDR=127.0.0.1:0")
		w, err := st.startProcess("bgcheck-worker-"+strconv.Itoa(i+1), "bgcheck-worker", append(env, st.o.workerEnv...))
		if err != nil {
			return err
		}
		st.workers = append(st.workers, w)
	}
	return nil
}

// signalWorkers sends every worker process sig: SIGSTOP holds the whole pipeline (the dispatcher
// runs in the workers), SIGCONT lets it go on.
func (st *stack) signalWorkers(sig syscall.Signal) {
	for _, w := range st.workers {
		if err := w.Signal(sig); err != nil {
			logf("signal %s to %s: %v", sig, w.Name, err)
		}
	}
}

// startProcess runs one of the built binaries as name, its output in name.log in the work
// directory.
func (st *stack) startProcess(name, binary string, env []string) (*devstack.Process, error) {
	out, err := os.Create(filepath.Join(st.work, name+".log"))
	if err != nil {
		return nil, err
	}
	defer out.Close() // the process has its own copy
	return devstack.StartProcess(name, filepath.Join(st.work, binary), nil, env, out)
}

// tearDown stops what setUp started, in reverse order: the workers and the API (gracefully: a
// worker allows itself 35 s for attempts in flight), then the meter, the receiver, the
// connections, Temporal and the database, and the work directory.
func (st *stack) tearDown() {
	for _, p := range append(st.workers, st.api) {
		if p != nil {
			p.Stop(40 * time.Second)
		}
	}
	for i := len(st.cleanups) - 1; i >= 0; i-- {
		st.cleanups[i]()
	}
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
