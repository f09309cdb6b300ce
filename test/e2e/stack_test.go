// Package e2e runs bgcheck end to end: a real Temporal dev server, PostgreSQL, the API server as
// cmd/bgcheck-api wires it, workers, and httptest receivers, all talking over real connections.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/devstack"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal/temporaltest"
	"github.com/bgcheck/bgcheck/internal/dev/eventcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/worker"
)

// testSchedule shortens the retry schedule so a whole series runs in seconds: 3 attempts.
const testSchedule = "1s,1s"

// stack is one deployment: its own database and, unless noted, its own Temporal server, started
// by devstack as the benchmarks start theirs; the API and workers run in this process.
type stack struct {
	t        testing.TB
	dev      *devstack.Stack
	cfg      config.Config
	db       *postgres.DB
	temporal *devtemporal.Server
	apiURL   string
	key      string // a full-access test key
	logs     *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newStack makes a database and config; temporalPort 0 starts a Temporal server at once (the dev
// server, or a cluster on PostgreSQL with $BGCHECK_TEST_TEMPORAL=postgres), otherwise the stack
// points at that port and the test starts Temporal there itself.
func newStack(t testing.TB, temporalPort int) *stack {
	t.Helper()
	o := devstack.Options{Dir: t.TempDir(), DatabasePrefix: "bgcheck_e2e_", Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	switch {
	case temporalPort != 0:
		o.Temporal, o.TemporalPort = devstack.TemporalNone, temporalPort
	case temporaltest.OnPostgres():
		o.Temporal = devstack.TemporalPostgres
	}
	dev, err := devstack.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	s := &stack{t: t, dev: dev, db: dev.DB, temporal: dev.Temporal, key: dev.TestKey, logs: &lockedBuffer{}}
	t.Cleanup(func() { eventcheck.ValidateStored(t, s.db.Pool()) }) // after the workers stop, before the close
	s.cfg = dev.Config()
	s.cfg.RetrySchedule, s.cfg.WorkerConcurrency = testSchedule, 50
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		t.Logf("service logs:\n%s", s.logs.String())
		if dev.Temporal != nil {
			t.Logf("end of Temporal's log %s:\n%s", dev.Temporal.LogFile, dev.Temporal.LogTail())
		}
	})
	return s
}

func (s *stack) logger(component string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(s.logs, nil)).With("component", component)
}

// startAPI runs the API exactly as cmd/bgcheck-api does, until the test ends.
func (s *stack) startAPI() {
	s.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	s.apiURL = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = apiserver.Serve(ctx, ln, s.cfg, s.logger("api")) }()
	s.t.Cleanup(func() { cancel(); <-done })
}

// startWorker runs a worker in this process until the test ends.
func (s *stack) startWorker() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = worker.Run(ctx, s.cfg, s.logger("worker")) }()
	s.t.Cleanup(func() { cancel(); <-done })
}

// workerProcess runs cmd/bgcheck-worker as a separate process, so a test can kill it.
func (s *stack) workerProcess() *devstack.Process {
	s.t.Helper()
	env := append(s.dev.Environ(), "BGCHECK_WORKER_METRICS_ADDR=127.0.0.1:0") // not :9090: tests run workers side by side
	p, err := devstack.StartProcess("bgcheck-worker", workerBinary(s.t), nil, env, s.logs)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(p.Kill)
	return p
}

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

func workerBinary(t testing.TB) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bgcheck-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		builtPath, buildErr = filepath.Join(dir, "bgcheck-worker"), devstack.Build(context.Background(), dir, "bgcheck-worker")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtPath
}

// call sends a request to the API with the stack's key and decodes a JSON answer into out.
func (s *stack) call(method, path string, body any, wantStatus int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.apiURL+path, rd)
	req.Header.Set("X-API-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != wantStatus {
		s.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

type endpointCreated struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

func (s *stack) createEndpoint(url string) endpointCreated {
	var ep endpointCreated
	s.call("POST", "/api/v1/webhooks/endpoints", map[string]any{"url": url}, http.StatusCreated, &ep)
	return ep
}

func (s *stack) sendTestEvent(eventType string) webhook.Envelope {
	var ev webhook.Envelope
	s.call("POST", "/api/v1/events/test", map[string]any{"type": eventType}, http.StatusCreated, &ev)
	return ev
}

type deliveryView struct {
	ID           string `json:"id"`
	EventID      string `json:"event_id"`
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	Attempts     []struct {
		Number     int     `json:"number"`
		StatusCode *int    `json:"status_code"`
		Error      *string `json:"error"`
		DurationMS int     `json:"duration_ms"`
	} `json:"attempts"`
}

// deliveryOf returns the one delivery of an endpoint.
func (s *stack) deliveryOf(endpointID string) deliveryView {
	s.t.Helper()
	var page struct {
		Data []deliveryView `json:"data"`
	}
	s.call("GET", "/api/v1/webhooks/endpoints/"+endpointID+"/deliveries", nil, http.StatusOK, &page)
	if len(page.Data) != 1 {
		s.t.Fatalf("endpoint %s has %d deliveries, want 1", endpointID, len(page.Data))
	}
	var d deliveryView
	s.call("GET", "/api/v1/webhooks/deliveries/"+page.Data[0].ID, nil, http.StatusOK, &d)
	return d
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hit is one request a receiver got.
type hit struct {
	at      time.Time
	header  http.Header
	body    []byte
	sigOK   bool
	attempt string
}

// receiver is an httptest server that checks each request's signature over the raw bytes and
// answers as answer says (by 1-based request number).
type receiver struct {
	*httptest.Server
	secret string
	mu     sync.Mutex
	hits   []hit
}

func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		h := hit{at: time.Now(), header: r.Header.Clone(), body: body, attempt: r.Header.Get("X-Service-Delivery-Attempt"),
			// Both schemes must hold: X-Service-Signature and the Standard Webhooks headers.
			sigOK: rc.secret != "" && webhook.Verify(rc.secret, body, r.Header.Get("X-Service-Signature")) == nil &&
				webhook.VerifyStandard(rc.secret, body, r.Header.Get(webhook.StandardIDHeader), r.Header.Get(webhook.StandardTimestampHeader),
					r.Header.Get(webhook.StandardSignatureHeader), 0, time.Now()) == nil}
		rc.hits = append(rc.hits, h)
		n := len(rc.hits)
		rc.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// temporalClient dials the stack's Temporal.
func (s *stack) temporalClient() client.Client {
	s.t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.cfg.TemporalAddress, Logger: nil})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(c.Close)
	return c
}
