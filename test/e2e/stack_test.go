// Package e2e runs bgcheck end to end: a real Temporal dev server, PostgreSQL, the API server as
// cmd/bgcheck-api wires it, workers, and httptest receivers, all talking over real connections.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal/temporaltest"
	"github.com/bgcheck/bgcheck/internal/dev/eventcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/worker"
	"github.com/bgcheck/bgcheck/workflows"
)

// testSchedule shortens the retry schedule so a whole series runs in seconds: 3 attempts.
const testSchedule = "1s,1s"

// stack is one deployment: its own database and, unless noted, its own Temporal dev server.
type stack struct {
	t        testing.TB
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

// newStack makes a database and config; temporalPort 0 starts a dev server at once, otherwise
// the stack points at that port and the test starts Temporal there itself.
func newStack(t testing.TB, temporalPort int) *stack {
	t.Helper()
	s := &stack{t: t, logs: &lockedBuffer{}}
	dbURL := pgtest.NewURL(t)
	var err error
	if s.db, err = postgres.Open(context.Background(), dbURL, postgres.WithSecrets(pgtest.SecretBox(t))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.db.Close)
	t.Cleanup(func() { eventcheck.ValidateStored(t, s.db.Pool()) }) // after the workers stop, before the close
	address := fmt.Sprintf("127.0.0.1:%d", temporalPort)
	if temporalPort == 0 {
		s.temporal = temporaltest.Start(t, devtemporal.Options{SearchAttributes: workflows.SearchAttributes, DynamicConfig: devtemporal.Tuned()})
		address = s.temporal.Address
	}
	s.cfg = config.Config{
		Env: config.EnvDevelopment, DatabaseURL: dbURL, TemporalAddress: address, TemporalNamespace: "default",
		AllowPrivateWebhookURLs: true, RetrySchedule: testSchedule, WorkerConcurrency: 50, LogLevel: "info",
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service logs:\n%s", s.logs.String())
		}
	})

	test := auth.NewAPIKey(bgcheck.ModeTest)
	if _, _, err := s.db.Bootstrap(context.Background(), "E2E", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin},
		[]bgcheck.NewAPIKey{{Mode: bgcheck.ModeTest, Hash: test.Hash, Prefix: test.Prefix, Last4: test.Last4}}); err != nil {
		t.Fatal(err)
	}
	s.key = test.Raw
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
func (s *stack) workerProcess() *exec.Cmd {
	s.t.Helper()
	cmd := exec.Command(workerBinary(s.t))
	cmd.Env = append(os.Environ(),
		"BGCHECK_ENV=development", "DATABASE_URL="+s.cfg.DatabaseURL, "TEMPORAL_ADDRESS="+s.cfg.TemporalAddress,
		"BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true", "BGCHECK_LOG_LEVEL=info",
		"BGCHECK_WORKER_METRICS_ADDR=127.0.0.1:0") // not :9090: tests run workers side by side
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
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
		builtPath = filepath.Join(dir, "bgcheck-worker")
		out, err := exec.Command("go", "build", "-o", builtPath, "github.com/bgcheck/bgcheck/cmd/bgcheck-worker").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build bgcheck-worker: %v\n%s", err, out)
		}
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
