package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/internal/dev/browsertest"
)

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func signIn(url, email string) chromedp.Tasks { return browsertest.SignIn(url, email, adminPassword) }

// TestDashboardInTheBrowser drives the admin dashboard in headless Chromium against a real API and
// PostgreSQL. Redelivery is checked up to what the API does (the delivery is pending again and
// waits for the dispatcher to start its workflow); e2e's TestDashboardRedeliversAFailedDeliveryToSuccess
// runs the same clicks with Temporal and a worker behind them and sees the delivery succeed.
func TestDashboardInTheBrowser(t *testing.T) {
	tab, newTab := browsertest.Start(t)
	s := newAdminScene(t, api.Options{TemporalNamespace: "bgcheck-prod"})
	ep := s.createEndpoint(s.a.TestKey, "https://example.com/hooks")
	d := s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)[0]
	s.finish(d, bgcheck.DeliveryFailed)
	url := s.srv.URL

	// Sign in and find the failed delivery on the overview.
	var failedText string
	var shot []byte
	run(t, tab, "sign in and see the overview", signIn(url, "admin@a.test"),
		chromedp.WaitVisible(`#failed-deliveries a.delivery-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#hourly-chart`, chromedp.ByQuery),
		chromedp.WaitNotVisible("#signin", chromedp.ByQuery), // the form goes once signed in
		chromedp.Text("#failed-deliveries", &failedText, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 90))
	if !strings.Contains(failedText, d) || !strings.Contains(failedText, "the endpoint answered 503") {
		t.Fatalf("the overview's failed deliveries read %q, want %s", failedText, d)
	}
	dir := os.Getenv("BGCHECK_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	shotPath := filepath.Join(dir, "dashboard-overview.jpg")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the overview: %s", shotPath)

	// Open it, check its attempt and workflow link, redeliver it.
	var status, attempts, workflow string
	var ok bool
	run(t, tab, "open the delivery", chromedp.Click(`#failed-deliveries a.delivery-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-status`, chromedp.ByQuery),
		chromedp.Text(`#delivery-status`, &status, chromedp.ByQuery),
		chromedp.Text(`#view table`, &attempts, chromedp.ByQuery),
		chromedp.AttributeValue(`#workflow-link`, "href", &workflow, &ok, chromedp.ByQuery))
	if status != "failed" || !strings.Contains(attempts, "503") {
		t.Fatalf("the delivery page shows status %q and attempts %q", status, attempts)
	}
	if want := "http://127.0.0.1:8233/namespaces/bgcheck-prod/workflows/" + d; workflow != want {
		t.Errorf("workflow link %q, want %q", workflow, want)
	}
	run(t, tab, "redeliver", chromedp.Click(`#redeliver`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-status.status-pending`, chromedp.ByQuery),
		chromedp.AttributeValue(`#workflow-link`, "href", &workflow, &ok, chromedp.ByQuery))
	// The redelivery runs as a new series under its own workflow id: the link follows it.
	if want := "http://127.0.0.1:8233/namespaces/bgcheck-prod/workflows/" + d + "-r2"; workflow != want {
		t.Errorf("workflow link after the redelivery %q, want %q", workflow, want)
	}
	if n, err := s.db.CountUndispatched(context.Background()); err != nil || n != 1 {
		t.Fatalf("%d deliveries (%v) wait for the dispatcher after the redelivery, want 1", n, err)
	}

	// Create a key, use it, revoke it.
	var key string
	run(t, tab, "create a key", chromedp.Click(`a[href="#/keys"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#key-create-submit`, chromedp.ByQuery),
		chromedp.SendKeys(`#key-name`, "from the browser", chromedp.ByQuery),
		chromedp.Click(`#key-create-submit`, chromedp.ByQuery),
		chromedp.WaitVisible(`#new-key-value`, chromedp.ByQuery),
		chromedp.Text(`#new-key-value`, &key, chromedp.ByQuery))
	if r := s.do("GET", "/api/v1/webhooks/endpoints", key, nil); r.Status != http.StatusOK {
		t.Fatalf("the new key got %d: %s", r.Status, r.Body)
	}
	var keyID string
	for _, k := range decode[pageJSON[struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}]](t, s.bearer("GET", adminPath+"/api-keys", s.adminA, nil), 200).Data {
		if k.Name == "from the browser" {
			keyID = k.ID
		}
	}
	if keyID == "" {
		t.Fatal("the key made in the browser is not listed")
	}
	row := `tr[data-key-id="` + keyID + `"]`
	run(t, tab, "revoke the key", chromedp.Evaluate(`window.confirm = () => true`, nil),
		chromedp.Click(row+` button.revoke`, chromedp.ByQuery),
		chromedp.WaitNotPresent(row, chromedp.ByQuery))
	if r := s.do("GET", "/api/v1/webhooks/endpoints", key, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("the revoked key got %d: %s", r.Status, r.Body)
	}

	// A refused access token is refreshed and the request retried; without a refresh token the
	// page returns to sign-in.
	var view string
	run(t, tab, "refresh a refused access token", chromedp.Evaluate(`sessionStorage.setItem('access_token', 'not.a.token')`, nil),
		chromedp.Click(`a[href="#/deliveries"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#delivery-list`, chromedp.ByQuery),
		chromedp.AttributeValue(`#view`, "data-view", &view, &ok, chromedp.ByQuery))
	if view != "deliveries" {
		t.Fatalf("after a refresh the view is %q", view)
	}
	run(t, tab, "end the session when the refresh fails",
		chromedp.Evaluate(`sessionStorage.setItem('access_token', 'not.a.token'); sessionStorage.setItem('refresh_token', 'not.a.token')`, nil),
		chromedp.Click(`a[href="#/overview"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#signin`, chromedp.ByQuery),
		signIn(url, "admin@a.test"),
		chromedp.WaitVisible(`#failed-deliveries`, chromedp.ByQuery))

	// The Checks page lists the account's checks; a check shows its screenings and links its
	// workflow in the Temporal UI; the overview counts them.
	cand := s.candidateWithEmail(s.a.TestKey, "jane@example.com")
	chk := decode[checkJSON](t, s.do("POST", "/api/v1/checks", s.a.TestKey, map[string]any{"candidate_id": cand, "package": "basic"}), http.StatusCreated)
	var checkStatus, screenings, checkWorkflow, checksCount string
	// The overview was drawn before the check existed, and a click on the link of the page one is
	// on changes no hash: visit the checks first, so that the overview is drawn afresh after them.
	run(t, tab, "open the checks", chromedp.Click(`a[href="#/checks"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#check-list a.check-link`, chromedp.ByQuery),
		chromedp.Click(`#check-list a.check-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#check-status`, chromedp.ByQuery),
		chromedp.Text(`#check-status`, &checkStatus, chromedp.ByQuery),
		chromedp.Text(`#view table`, &screenings, chromedp.ByQuery),
		chromedp.AttributeValue(`#check-workflow-link`, "href", &checkWorkflow, &ok, chromedp.ByQuery),
		chromedp.Click(`a[href="#/overview"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#count-checks`, chromedp.ByQuery),
		chromedp.Text(`#count-checks b`, &checksCount, chromedp.ByQuery))
	if checksCount != "1" || checkStatus != "invitation_pending" || !strings.Contains(screenings, "national_criminal") ||
		checkWorkflow != "http://127.0.0.1:8233/namespaces/bgcheck-prod/workflows/check-"+chk.ID {
		t.Fatalf("checks: count %q, status %q, screenings %q, workflow link %q", checksCount, checkStatus, screenings, checkWorkflow)
	}

	// FCRA: the adverse actions, one held by the candidate's dispute; the admin resolves the
	// dispute as corrected (the report turns clear, so the held adverse action is withdrawn) and
	// cancels another adverse action from its list; then raises the default waiting period.
	consider := s.completeCheck(s.a.TestKey, cand, "consider")
	held := decode[adverseJSON](t, s.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", s.a.TestKey,
		map[string]any{"reasons": []string{"a record relevant to the role"}}), http.StatusCreated)
	dsp := decode[disputeJSON](t, s.bearer("POST", "/api/v1/consumer/reports/"+consider+"/disputes",
		s.consumerToken(consider, "an-invitation-token-for-the-dashboard-01"),
		map[string]any{"screening": "national_criminal", "reason": "not my record"}), http.StatusCreated)
	other := s.completeCheck(s.a.TestKey, s.candidateWithEmail(s.a.TestKey, "olga@example.com"), "consider")
	toCancel := decode[adverseJSON](t, s.do("POST", "/api/v1/checks/"+other+"/adverse-actions", s.a.TestKey,
		map[string]any{"reasons": []string{"a record relevant to the role"}}), http.StatusCreated)
	var adverseRows, disputeStatus string
	heldRow, cancelRow := `tr[data-adverse-id="`+held.ID+`"]`, `tr[data-adverse-id="`+toCancel.ID+`"]`
	run(t, tab, "see the held adverse action", chromedp.Click(`a[href="#/adverse-actions"]`, chromedp.ByQuery),
		chromedp.WaitVisible(heldRow, chromedp.ByQuery),
		chromedp.Text(heldRow, &adverseRows, chromedp.ByQuery))
	if !strings.Contains(adverseRows, "held by a dispute") || !strings.Contains(adverseRows, "pending") {
		t.Fatalf("the held adverse action reads %q", adverseRows)
	}
	run(t, tab, "resolve the dispute", chromedp.Click(`a[href="#/disputes"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#dispute-list a.dispute-link`, chromedp.ByQuery),
		chromedp.Click(`#dispute-list a.dispute-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#dispute-resolve`, chromedp.ByQuery),
		chromedp.SetValue(`#dispute-resolution`, "corrected", chromedp.ByQuery),
		chromedp.SendKeys(`#dispute-note`, "a namesake's record", chromedp.ByQuery),
		chromedp.Click(`#dispute-resolve-submit`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#dispute-resolve`, chromedp.ByQuery),
		chromedp.Text(`#dispute-status`, &disputeStatus, chromedp.ByQuery))
	got := decode[disputeJSON](t, s.do("GET", "/api/v1/disputes/"+dsp.ID, s.a.TestKey, nil), http.StatusOK)
	if disputeStatus != "resolved" || got.Resolution == nil || *got.Resolution != "corrected" || *got.ResolvedBy != "admin" {
		t.Fatalf("after resolving in the dashboard: shown %q, dispute %+v", disputeStatus, got)
	}
	run(t, tab, "cancel an adverse action", chromedp.Click(`a[href="#/adverse-actions"]`, chromedp.ByQuery),
		chromedp.WaitVisible(cancelRow+` button.cancel-adverse`, chromedp.ByQuery),
		chromedp.Evaluate(`window.confirm = () => true`, nil),
		chromedp.Click(cancelRow+` button.cancel-adverse`, chromedp.ByQuery),
		chromedp.WaitNotPresent(cancelRow+` button.cancel-adverse`, chromedp.ByQuery),
		chromedp.Text(`#adverse-list`, &adverseRows, chromedp.ByQuery))
	for _, id := range []string{held.ID, toCancel.ID} {
		if a := decode[adverseJSON](t, s.do("GET", "/api/v1/adverse-actions/"+id, s.a.TestKey, nil), http.StatusOK); a.Status != "canceled" {
			t.Fatalf("adverse action %s is %s, want canceled (list reads %q)", id, a.Status, adverseRows)
		}
	}
	run(t, tab, "raise the waiting period", chromedp.Click(`a[href="#/settings"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#waiting-days`, chromedp.ByQuery),
		chromedp.SetValue(`#waiting-days`, "8", chromedp.ByQuery),
		chromedp.Click(`#settings-save`, chromedp.ByQuery),
		chromedp.WaitVisible(`#message.info`, chromedp.ByQuery))
	if st := decode[map[string]any](t, s.bearer("GET", "/api/v1/admin/settings", s.adminA, nil), http.StatusOK); st["adverse_action_waiting_days"] != float64(8) {
		t.Fatalf("settings after saving: %v", st)
	}

	// Billing: the quota, an issued invoice printed as a page, the payment methods.
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.db.Pool().Exec(context.Background(), `INSERT INTO usage_records (id, account_id, mode, check_id, package, unit_price_cents, created_at)
		VALUES ($1, $2, 'live', $3, 'driver', 7999, $4)`, bgcheck.NewID(bgcheck.PrefixUsageRecord), s.a.ID, bgcheck.NewID(bgcheck.PrefixCheck),
		october.AddDate(0, 0, 5)); err != nil {
		t.Fatal(err)
	}
	inv, err := s.db.IssueInvoice(context.Background(), s.a.ID, october)
	if err != nil {
		t.Fatal(err)
	}
	decode[map[string]any](t, s.do("POST", "/api/v1/billing/payment-methods", s.a.LiveKey, map[string]any{"processor": "stripe",
		"processor_ref": "pm_1Q2w3E4r5T6y7U8i", "brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": time.Now().Year() + 2}), http.StatusCreated)
	var quotaText, invoiceTotal, methods string
	run(t, tab, "open the billing page and the invoice", chromedp.Click(`a[href="#/billing"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#invoice-list a.invoice-link`, chromedp.ByQuery),
		chromedp.Text(`#billing-quota`, &quotaText, chromedp.ByQuery),
		chromedp.Text(`#payment-methods`, &methods, chromedp.ByQuery),
		chromedp.Click(`#invoice-list a.invoice-link`, chromedp.ByQuery),
		chromedp.WaitVisible(`#invoice-total`, chromedp.ByQuery),
		chromedp.Text(`#invoice-total`, &invoiceTotal, chromedp.ByQuery))
	if !strings.Contains(quotaText, "of 1000 live checks used") || !strings.Contains(methods, "visa …4242") ||
		!strings.Contains(invoiceTotal, "$79.99") || inv.TotalCents != 7999 {
		t.Fatalf("billing: quota %q, methods %q, invoice total %q", quotaText, methods, invoiceTotal)
	}

	// Endpoints with their success rate and health; one disabled for failing is enabled again in
	// one click; then sign out.
	if _, err := s.db.Pool().Exec(context.Background(), `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing',
		disabled_at = now(), failing_since = now() - interval '6 days' WHERE id = $1`, ep.ID); err != nil {
		t.Fatal(err)
	}
	var endpoints, state string
	epRow := `tr[data-endpoint-id="` + ep.ID + `"]`
	run(t, tab, "list endpoints, enable one, sign out", chromedp.Click(`a[href="#/endpoints"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#endpoint-list td.success-rate`, chromedp.ByQuery),
		chromedp.Text(`#endpoint-list`, &endpoints, chromedp.ByQuery),
		chromedp.Click(epRow+` button.enable-endpoint`, chromedp.ByQuery),
		chromedp.WaitNotPresent(epRow+` button.enable-endpoint`, chromedp.ByQuery),
		chromedp.Text(epRow+` td.endpoint-state`, &state, chromedp.ByQuery),
		chromedp.Click(`#signout`, chromedp.ByQuery),
		chromedp.WaitVisible(`#signin`, chromedp.ByQuery))
	if !strings.Contains(endpoints, ep.ID) || !strings.Contains(endpoints, "disabled: every delivery failed since") {
		t.Errorf("the endpoints view reads %q, want %s disabled for failing", endpoints, ep.ID)
	}
	if got := decode[map[string]any](t, s.do("GET", "/api/v1/webhooks/endpoints/"+ep.ID, s.a.TestKey, nil), http.StatusOK); got["enabled"] != true ||
		got["disabled_reason"] != nil || strings.TrimSpace(state) != "yes" {
		t.Fatalf("after Enable: shown %q, endpoint %v", state, got)
	}

	// A consumer sees the admin-only message and no data.
	consumer := newTab()
	var message string
	var shown int
	run(t, consumer, "sign in as a consumer", signIn(url, "consumer@a.test"),
		chromedp.WaitVisible(`#message`, chromedp.ByQuery),
		chromedp.Text(`#message`, &message, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('view').childElementCount + (document.getElementById('nav').hidden ? 0 : 100)`, &shown))
	if !strings.Contains(message, "This dashboard is for admins") || shown != 0 {
		t.Fatalf("a consumer sees %q and %d elements", message, shown)
	}
}
