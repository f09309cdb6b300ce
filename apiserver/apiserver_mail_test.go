package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/mail/mailtest"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// With BGCHECK_SMTP_URL set, the production wiring mails magic links over SMTP: the link in the
// mail signs the consumer in once, an unknown address gets the same answer and no mail, and the
// link never reaches the log.
func TestMagicLinkMailedOverSMTP(t *testing.T) {
	inbox := mailtest.NewServer(t, mailtest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // Temporal is not needed here
	cfg := config.Config{
		DatabaseURL:       pgtest.NewURL(t),
		TemporalAddress:   closed.Addr().String(),
		TemporalNamespace: "default",
		SMTPURL:           "smtp://" + inbox.Addr + "?from=bgcheck%40example.com",
		PortalURL:         "https://portal.example.com",
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- apiserver.Serve(ctx, ln, cfg, log) }()
	base := "http://" + ln.Addr().String() + "/api/v1/auth"

	if status, body := postJSON(t, base+"/register", `{"email":"dana@example.com","password":"correct horse battery","name":"Dana"}`); status != http.StatusCreated {
		t.Fatalf("register: %d %s", status, body)
	}
	if status, body := postJSON(t, base+"/magic-link/request", `{"email":"dana@example.com"}`); status != http.StatusAccepted || strings.TrimSpace(body) != "{}" {
		t.Fatalf("magic-link request: %d %s", status, body)
	}

	m := inbox.WaitFor(t, "dana@example.com", 10*time.Second)
	if m.From != "bgcheck@example.com" || m.Header.Get("Subject") != "Your bgcheck sign-in link" {
		t.Fatalf("mail from %q, subject %q", m.From, m.Header.Get("Subject"))
	}
	link := regexp.MustCompile(`https://portal\.example\.com/magic-link\?token=[A-Za-z0-9_-]+`).FindString(m.Text)
	if link == "" {
		t.Fatalf("no magic link in the mail:\n%s", m.Text)
	}
	if !strings.Contains(m.HTML, link) {
		t.Fatalf("the HTML part lacks %s:\n%s", link, m.HTML)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	token := u.Query().Get("token")
	verify, _ := json.Marshal(map[string]string{"token": token})

	status, body := postJSON(t, base+"/magic-link/verify", string(verify))
	var pair struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		TokenType    string `json:"token_type"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &pair) != nil ||
		pair.AccessToken == "" || pair.RefreshToken == "" || pair.TokenType != "Bearer" {
		t.Fatalf("verify: %d %s", status, body)
	}
	if status, body := postJSON(t, base+"/magic-link/verify", string(verify)); status != http.StatusUnauthorized ||
		!strings.Contains(body, `"code":"invalid_magic_link"`) {
		t.Fatalf("second verify: %d %s", status, body)
	}

	if status, body := postJSON(t, base+"/magic-link/request", `{"email":"nobody@example.com"}`); status != http.StatusAccepted || strings.TrimSpace(body) != "{}" {
		t.Fatalf("magic-link request for an unknown address: %d %s", status, body)
	}
	// Serve returns only after the mails in flight are sent, so once it has, the request for the
	// unknown address has been handled to the end: no waiting on a clock.
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if msgs := inbox.Messages(); len(msgs) != 1 {
		t.Fatalf("%d mails arrived, want only Dana's: %+v", len(msgs), msgs)
	}
	if strings.Contains(logs.String(), token) {
		t.Fatal("the magic link was logged though it went out by mail")
	}
}

// A malformed BGCHECK_SMTP_URL stops start-up with an error that names the variable and does not
// repeat the password, before the database is touched.
func TestServeRejectsMalformedSMTPURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{DatabaseURL: "postgres://nobody@127.0.0.1:1/none", SMTPURL: "smtp://relay:s3cret@mail.example.com:port"}
	err = apiserver.Serve(context.Background(), ln, cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "BGCHECK_SMTP_URL") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("the listener was left open")
	}
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
