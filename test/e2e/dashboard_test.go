package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/internal/dev/browsertest"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

// An admin finds a delivery that failed for real (three attempts on the shortened schedule, against
// a receiver that answered 500) on the dashboard, opens it and redelivers it once the receiver
// works; the new series runs through Temporal and a worker, and the page shows it succeeded.
func TestDashboardRedeliversAFailedDeliveryToSuccess(t *testing.T) {
	t.Parallel()
	tab, _ := browsertest.Start(t)
	s := newStack(t, 0)
	s.startAPI()
	s.startWorker()

	var healthy atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ep := s.createEndpoint(rc.URL)
	rc.secret = ep.Secret
	s.sendTestEvent(webhook.EventReportReady)
	waitFor(t, 30*time.Second, "the delivery fails after its three attempts", func() bool { return s.deliveryOf(ep.ID).Status == "failed" })
	d := s.deliveryOf(ep.ID)

	const password = "correct horse battery"
	hash, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	var accountID string
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT account_id FROM api_keys LIMIT 1`).Scan(&accountID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.CreateUser(context.Background(), postgres.NewUser{AccountID: accountID, Email: "admin@e2e.test",
		Role: bgcheck.RoleAdmin, PasswordHash: hash}); err != nil {
		t.Fatal(err)
	}

	var status string
	if err := chromedp.Run(tab,
		browsertest.SignIn(s.apiURL, "admin@e2e.test", password),
		chromedp.WaitVisible(`#failed-deliveries a.delivery-link`, chromedp.ByQuery),
		chromedp.Click(`#failed-deliveries a.delivery-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-status.status-failed`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("sign in and open the failed delivery: %v", err)
	}
	healthy.Store(true)
	if err := chromedp.Run(tab, chromedp.Click(`#redeliver`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-status`, chromedp.ByQuery)); err != nil {
		t.Fatalf("redeliver: %v", err)
	}
	// The page shows the state when it loads; reload until the new series has succeeded.
	deadline := time.Now().Add(30 * time.Second)
	for status != "succeeded" {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery page still shows %q 30 s after the redelivery", status)
		}
		time.Sleep(300 * time.Millisecond)
		if err := chromedp.Run(tab, chromedp.Reload(), chromedp.WaitVisible(`#delivery-status`, chromedp.ByQuery),
			chromedp.Text(`#delivery-status`, &status, chromedp.ByQuery)); err != nil {
			t.Fatalf("reload the delivery page: %v", err)
		}
	}
	var attempts string
	if err := chromedp.Run(tab, chromedp.Text(`#view table`, &attempts, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(attempts, "500") || !strings.Contains(attempts, "204") {
		t.Fatalf("the attempts table does not show the failures and the success: %q", attempts)
	}
	hits := rc.got()
	if last := hits[len(hits)-1]; last.attempt != "4" || !last.sigOK || last.header.Get("X-Service-Delivery-Id") != d.ID {
		t.Fatalf("the redelivery arrived as attempt %s (signature ok %v)", last.attempt, last.sigOK)
	}
}
