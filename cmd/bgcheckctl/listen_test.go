package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/webhook"
)

// lines is stdout shared with the command's goroutines.
type lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// last returns the last line printed.
func (l *lines) last() string {
	s := strings.TrimRight(l.String(), "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// startListen runs `bgcheckctl listen` on a free port, as a user would, with a database and
// configuration that cannot be used: listen must need neither. It returns the URL it announced.
func startListen(t *testing.T, args ...string) (string, *lines) {
	t.Helper()
	t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	t.Setenv("BGCHECK_RETRY_SCHEDULE", "not a schedule")
	out := &lines{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"listen", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), out)
	}()
	t.Cleanup(func() {
		cancel() // Ctrl-C
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("listen returned %v after Ctrl-C", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("listen did not stop after Ctrl-C")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		first, _, complete := strings.Cut(out.String(), "\n")
		if rest, ok := strings.CutPrefix(first, "listening on "); ok && complete {
			return rest, out
		}
		select {
		case err := <-done:
			t.Fatalf("listen ended at once: %v; printed %q", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("listen did not announce its address; printed %q", out.String())
	return "", nil
}

// delivery is a request as bgcheck sends it.
func delivery(t *testing.T, secret, attempt string) (body []byte, header http.Header) {
	t.Helper()
	body, err := bgcheck.EncodeEnvelope("evt_0123456789abcdef", webhook.EventCheckCompleted, time.Now(),
		webhook.SampleData(webhook.EventCheckCompleted))
	if err != nil {
		t.Fatal(err)
	}
	header = http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	now := time.Now()
	standard, err := webhook.SignStandard(secret, "evt_0123456789abcdef", now, body)
	if err != nil {
		t.Fatal(err)
	}
	header.Set(webhook.StandardIDHeader, "evt_0123456789abcdef")
	header.Set(webhook.StandardTimestampHeader, strconv.FormatInt(now.Unix(), 10))
	header.Set(webhook.StandardSignatureHeader, standard)
	header.Set("X-Service-Event-Id", "evt_0123456789abcdef")
	header.Set("X-Service-Event-Type", webhook.EventCheckCompleted)
	header.Set("X-Service-Delivery-Id", "dlv_0123456789abcdef")
	header.Set("X-Service-Delivery-Attempt", attempt)
	return body, header
}

func post(t *testing.T, url string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(answer)
}

func TestListenChecksSignatures(t *testing.T) {
	secret := webhook.NewSecret()
	url, out := startListen(t, "--secret", secret)
	if !strings.HasSuffix(url, "/webhooks") {
		t.Fatalf("announced %q, want the default path /webhooks", url)
	}

	body, header := delivery(t, secret, "2")
	if status, answer := post(t, url, body, header); status != http.StatusNoContent {
		t.Fatalf("a correctly signed delivery: %d %s", status, answer)
	}
	if got, want := out.last(), " check.completed evt_0123456789abcdef attempt=2 signature=ok standard=ok answered=204"; !strings.HasSuffix(got, want) {
		t.Errorf("printed %q, want it to end %q", got, want)
	}
	if _, err := time.Parse(time.RFC3339, strings.Fields(out.last())[0]); err != nil {
		t.Errorf("the line does not start with the time: %q", out.last())
	}

	tampered := bytes.Replace(body, []byte(`"check.completed"`), []byte(`"check.failed"`), 1)
	if bytes.Equal(tampered, body) {
		t.Fatal("the body was not changed")
	}
	if status, _ := post(t, url, tampered, header); status != http.StatusUnauthorized {
		t.Fatalf("a tampered delivery: %d, want 401", status)
	}
	if got := out.last(); !strings.HasSuffix(got, "attempt=2 signature=INVALID standard=INVALID answered=401") {
		t.Errorf("printed %q for a tampered delivery", got)
	}
	header.Set(webhook.SignatureHeader, webhook.Sign(webhook.NewSecret(), body))
	if status, _ := post(t, url, body, header); status != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret: %d, want 401", status)
	}

	printed := strings.Count(out.String(), "\n")
	if res, err := http.Get(url); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v, want 405", res, err)
	}
	if status, _ := post(t, strings.TrimSuffix(url, "/webhooks")+"/elsewhere", body, header); status != http.StatusNotFound {
		t.Errorf("another path: %d, want 404", status)
	}
	if strings.Count(out.String(), "\n") != printed {
		t.Errorf("requests that are not deliveries were printed: %q", out.String())
	}
}

func TestListenForwards(t *testing.T) {
	type got struct {
		header http.Header
		body   []byte
	}
	received := make(chan got, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- got{r.Header.Clone(), body}
		if r.URL.Path != "/hooks" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "queued")
	}))
	t.Cleanup(app.Close)
	secret := webhook.NewSecret()
	url, out := startListen(t, "--secret", secret, "--path", "/in", "--forward-to", app.URL+"/hooks")
	if !strings.HasSuffix(url, "/in") {
		t.Fatalf("announced %q, want the path /in", url)
	}

	body, header := delivery(t, secret, "1")
	status, answer := post(t, url, body, header)
	if status != http.StatusAccepted || answer != "queued" {
		t.Fatalf("answered %d %q, want the application's 202 queued", status, answer)
	}
	fwd := <-received
	if !bytes.Equal(fwd.body, body) {
		t.Errorf("forwarded body %s\nwant the bytes received %s", fwd.body, body)
	}
	for _, h := range []string{"Content-Type", webhook.SignatureHeader, "X-Service-Event-Id", "X-Service-Event-Type",
		"X-Service-Delivery-Id", "X-Service-Delivery-Attempt"} {
		if fwd.header.Get(h) != header.Get(h) {
			t.Errorf("forwarded %s: %q, want %q", h, fwd.header.Get(h), header.Get(h))
		}
	}
	if err := webhook.Verify(secret, fwd.body, fwd.header.Get(webhook.SignatureHeader)); err != nil {
		t.Errorf("the application cannot verify the forwarded delivery: %v", err)
	}
	if got := out.last(); !strings.HasSuffix(got, "attempt=1 signature=ok standard=ok forwarded=202 answered=202") {
		t.Errorf("printed %q", got)
	}

	// A delivery whose signature does not hold is refused here and not forwarded.
	if status, _ := post(t, url, append(body, ' '), header); status != http.StatusUnauthorized {
		t.Errorf("a tampered delivery: %d, want 401", status)
	}
	select {
	case g := <-received:
		t.Errorf("a tampered delivery was forwarded: %s", g.body)
	case <-time.After(100 * time.Millisecond):
	}

	// The application down: the sender gets 502 and the line says why.
	app.Close()
	if status, _ := post(t, url, body, header); status != http.StatusBadGateway {
		t.Errorf("with the application down: %d, want 502", status)
	}
	if got := out.last(); !strings.Contains(got, "signature=ok standard=ok forward-error=") || !strings.HasSuffix(got, "answered=502") {
		t.Errorf("printed %q", got)
	}
}

func TestListenUsage(t *testing.T) {
	t.Setenv("BGCHECK_WEBHOOK_SECRET", "")
	for _, args := range [][]string{
		{"listen"},
		{"listen", "--secret", "not-a-secret"},
		{"listen", "--secret", "whsec_x", "--path", "webhooks"},
		{"listen", "--secret", "whsec_x", "--forward-to", "localhost:3000/hooks"},
		{"listen", "--secret", "whsec_x", "extra"},
	} {
		var ue usageError
		if _, err := ctl(t, "", args...); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}
