package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck/mail/mailtest"
)

// An endpoint that fails every delivery for the configured window (3 s here, 5 days by default)
// is disabled by its health workflow on the dev server, and its admins are mailed over SMTP; new
// events then make no deliveries to it.
func TestAFailingEndpointIsDisabledAndItsAdminsMailed(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	inbox := mailtest.NewServer(t, mailtest.Options{})
	s.cfg.SMTPURL = "smtp://" + inbox.Addr + "?from=bgcheck%40example.com"
	s.cfg.EndpointDisableAfter = 3 * time.Second
	s.startAPI()
	s.startWorker()
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	ep := s.createEndpoint(rc.URL + "/hooks")
	var adminEmail string
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT email FROM users LIMIT 1`).Scan(&adminEmail); err != nil {
		t.Fatal(err)
	}
	s.sendTestEvent("check.completed")
	msg := inbox.WaitFor(t, adminEmail, 60*time.Second)
	if !strings.Contains(msg.Header.Get("Subject"), "disabled") || !strings.Contains(msg.Text, ep.ID) {
		t.Fatalf("the notice: %s\n%s", msg.Header.Get("Subject"), msg.Text)
	}
	var got struct {
		Enabled        bool    `json:"enabled"`
		DisabledReason *string `json:"disabled_reason"`
	}
	s.call("GET", "/api/v1/webhooks/endpoints/"+ep.ID, nil, http.StatusOK, &got)
	if got.Enabled || got.DisabledReason == nil || *got.DisabledReason != "failing" {
		t.Fatalf("the endpoint after the window: %+v", got)
	}
	if n := len(inbox.Messages()); n != 1 {
		t.Fatalf("%d notices, want 1", n)
	}
}
