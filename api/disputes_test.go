package api_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

type disputeJSON struct {
	ID         string    `json:"id"`
	Check      string    `json:"check"`
	CheckID    string    `json:"check_id"`
	Screening  string    `json:"screening"`
	Status     string    `json:"status"`
	FiledAt    time.Time `json:"filed_at"`
	DueAt      time.Time `json:"due_at"`
	Resolution *string   `json:"resolution"`
	ResolvedBy *string   `json:"resolved_by"`
}

// consumerToken signs the candidate of checkID in through an invitation, as the mail's link does.
func (e *env) consumerToken(checkID, token string) string {
	e.t.Helper()
	hash := sha256.Sum256([]byte(token))
	if err := e.db.CreateInvitation(context.Background(), checkID, hash[:], time.Now().Add(time.Hour)); err != nil {
		e.t.Fatal(err)
	}
	return decode[pairJSON](e.t, e.do("POST", "/api/v1/auth/invitation", "", map[string]any{"token": token}), 200).AccessToken
}

// eventTypesOf lists the types of the account's events about a check, oldest first.
func (e *env) eventTypesOf(checkID string) []string {
	e.t.Helper()
	rows, err := e.db.Pool().Query(context.Background(),
		`SELECT type FROM events WHERE convert_from(body, 'UTF8')::jsonb->'data'->>'check_id' = $1 ORDER BY id`, bgcheck.CheckUUID(checkID))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var types []string
	for rows.Next() {
		var typ string
		if err := rows.Scan(&typ); err != nil {
			e.t.Fatal(err)
		}
		types = append(types, typ)
	}
	return types
}

// A candidate disputes a screening of their own report; the check is in dispute and its adverse
// action held; a correction revises the report to clear, emits the events in order, returns the
// check to complete and withdraws the adverse action. Bad input changes nothing.
func TestDisputeCorrectedRevisesTheReport(t *testing.T) {
	e, _ := newPortalEnv(t)
	a, b := e.newAccount(), e.newAccount()
	jane := e.candidateWithEmail(a.TestKey, "jane@example.com")
	consider := e.completeCheck(a.TestKey, jane, "consider")
	pending := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "basic"}), 201).ID
	olga := e.candidateWithEmail(a.TestKey, "olga@example.com")
	olgas := e.completeCheck(a.TestKey, olga, "consider")
	aa := decode[adverseJSON](t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey,
		map[string]any{"reasons": []string{"a conviction relevant to the role"}}), http.StatusCreated)
	token := e.consumerToken(consider, "an-invitation-token-for-jane-dispute-01")
	file := func(check string, body any) *response {
		return e.bearer("POST", "/api/v1/consumer/reports/"+check+"/disputes", token, body)
	}
	body := map[string]any{"screening": "national_criminal", "reason": "the conviction is someone else's"}

	wantProblem(t, file(pending, body), 409, bgcheck.CodeReportNotReady)
	wantProblem(t, file(olgas, body), 404, bgcheck.CodeNotFound)
	wantFieldError(t, file(consider, map[string]any{"screening": "motor_vehicle", "reason": "x"}), "screening")
	wantFieldError(t, file(consider, map[string]any{"screening": "national_criminal"}), "reason")
	wantProblem(t, e.do("POST", "/api/v1/consumer/reports/"+consider+"/disputes", a.TestKey, body), 401, bgcheck.CodeMissingToken)
	if n := len(decode[pageJSON[disputeJSON]](t, e.do("GET", "/api/v1/disputes", a.TestKey, nil), 200).Data); n != 0 {
		t.Fatalf("bad input left %d disputes", n)
	}

	before := time.Now()
	d := decode[disputeJSON](t, file(consider, body), http.StatusCreated)
	if d.Status != "open" || d.Check != consider || d.CheckID != bgcheck.CheckUUID(consider) || d.Screening != "national_criminal" ||
		d.DueAt.Sub(d.FiledAt) != bgcheck.DisputePeriod || d.FiledAt.Before(before.Add(-time.Second)) {
		t.Fatalf("filed %+v", d)
	}
	wantProblem(t, file(consider, body), 409, bgcheck.CodeDisputeOpen)
	if c := decode[checkJSON](t, e.do("GET", "/api/v1/checks/"+consider, a.TestKey, nil), 200); c.Status != "dispute" {
		t.Fatalf("the disputed check is %s", c.Status)
	}
	if got := decode[map[string]any](t, e.do("GET", "/api/v1/adverse-actions/"+aa.ID, a.TestKey, nil), 200); got["on_hold"] != true || got["status"] != "pending" {
		t.Fatalf("the adverse action during the dispute: %v", got)
	}
	// Neither another adverse action nor a cancel of the check while it is disputed.
	wantProblem(t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey,
		map[string]any{"reasons": []string{"x"}}), 409, bgcheck.CodeCheckNotAdverse)
	wantProblem(t, e.do("POST", "/api/v1/checks/"+consider+"/cancel", a.TestKey, nil), 409, bgcheck.CodeCheckFinished)
	// Both sides see it; nobody else does.
	if l := decode[pageJSON[disputeJSON]](t, e.bearer("GET", "/api/v1/consumer/reports/"+consider+"/disputes", token, nil), 200); len(l.Data) != 1 {
		t.Fatalf("the candidate's disputes of the report: %+v", l)
	}
	decode[disputeJSON](t, e.bearer("GET", "/api/v1/consumer/disputes/"+d.ID, token, nil), 200)
	if l := decode[pageJSON[disputeJSON]](t, e.do("GET", "/api/v1/disputes?status=open&check="+consider, a.TestKey, nil), 200); len(l.Data) != 1 || l.Data[0].ID != d.ID {
		t.Fatalf("the account's open disputes: %+v", l)
	}
	wantProblem(t, e.do("GET", "/api/v1/disputes/"+d.ID, b.TestKey, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.do("GET", "/api/v1/disputes/"+d.ID, a.LiveKey, nil), 404, bgcheck.CodeNotFound)
	wantFieldError(t, e.do("GET", "/api/v1/disputes?status=closed", a.TestKey, nil), "status")

	// Resolution: the agency's in live mode, another account's never, a known resolution only.
	resolve := map[string]any{"resolution": "corrected", "note": "the record belonged to a namesake"}
	wantProblem(t, e.do("POST", "/api/v1/disputes/"+d.ID+"/resolve", a.LiveKey, resolve), 403, bgcheck.CodeTestModeOnly)
	wantProblem(t, e.do("POST", "/api/v1/disputes/"+d.ID+"/resolve", b.TestKey, resolve), 404, bgcheck.CodeNotFound)
	wantFieldError(t, e.do("POST", "/api/v1/disputes/"+d.ID+"/resolve", a.TestKey, map[string]any{"resolution": "withdrawn"}), "resolution")
	if got := decode[disputeJSON](t, e.do("GET", "/api/v1/disputes/"+d.ID, a.TestKey, nil), 200); got.Status != "open" {
		t.Fatalf("refused resolutions changed the dispute: %+v", got)
	}
	r := decode[disputeJSON](t, e.do("POST", "/api/v1/disputes/"+d.ID+"/resolve", a.TestKey, resolve), 200)
	if r.Status != "resolved" || r.Resolution == nil || *r.Resolution != "corrected" || r.ResolvedBy == nil || *r.ResolvedBy != "api" {
		t.Fatalf("resolved %+v", r)
	}
	wantProblem(t, e.do("POST", "/api/v1/disputes/"+d.ID+"/resolve", a.TestKey, resolve), 409, bgcheck.CodeDisputeResolved)

	c := decode[checkJSON](t, e.do("GET", "/api/v1/checks/"+consider, a.TestKey, nil), 200)
	if c.Status != "complete" || c.Assessment == nil || *c.Assessment != "clear" {
		t.Fatalf("after the correction the check is %s / %v", c.Status, c.Assessment)
	}
	report := decode[map[string]any](t, e.do("GET", "/api/v1/checks/"+consider+"/report", a.TestKey, nil), 200)
	if report["version"] != float64(2) || report["assessment"] != "clear" || report["revised_at"] == nil {
		t.Fatalf("revised report %v", report)
	}
	want := []string{"check.created", "check.completed", "report.ready", "adverse_action.created", "dispute.filed",
		"dispute.resolved", "report.ready", "check.completed"}
	if got := e.eventTypesOf(consider); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if got := decode[adverseJSON](t, e.do("GET", "/api/v1/adverse-actions/"+aa.ID, a.TestKey, nil), 200); got.Status != "canceled" {
		t.Fatalf("the adverse action on a report revised to clear is %s", got.Status)
	}
}

// A verified dispute leaves the report as it was and releases the adverse action, which its
// workflow is to be told; an admin resolves test-mode disputes in the dashboard.
func TestDisputeVerifiedReleasesTheAdverseAction(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	e.user(a.ID, "admin@verified.test", bgcheck.RoleAdmin, "correct horse battery")
	admin := e.login("admin@verified.test", "correct horse battery").AccessToken
	jane := e.candidateWithEmail(a.TestKey, "jane@example.com")
	consider := e.completeCheck(a.TestKey, jane, "consider")
	aa := decode[adverseJSON](t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey,
		map[string]any{"reasons": []string{"a conviction relevant to the role"}}), http.StatusCreated)
	token := e.consumerToken(consider, "an-invitation-token-for-jane-dispute-02")
	d := decode[disputeJSON](t, e.bearer("POST", "/api/v1/consumer/reports/"+consider+"/disputes", token,
		map[string]any{"screening": "national_criminal", "reason": "it was dismissed"}), http.StatusCreated)

	// Held, the adverse action cannot be finalized, whatever its workflow has heard.
	if held, err := e.db.FinalizeAdverseAction(context.Background(), aa.ID); err != nil || !held {
		t.Fatalf("finalizing a held adverse action: held %v, %v", held, err)
	}
	// Say the dispute was filed two days ago: the release moves the end out by those two days.
	if _, err := e.db.Pool().Exec(context.Background(), `UPDATE adverse_actions SET held_at = held_at - interval '2 days' WHERE id = $1`, aa.ID); err != nil {
		t.Fatal(err)
	}
	if l := decode[pageJSON[disputeJSON]](t, e.bearer("GET", "/api/v1/admin/disputes?mode=test", admin, nil), 200); len(l.Data) != 1 {
		t.Fatalf("the dashboard's disputes: %+v", l)
	}
	if l := decode[pageJSON[adverseJSON]](t, e.bearer("GET", "/api/v1/admin/adverse-actions", admin, nil), 200); len(l.Data) != 1 {
		t.Fatalf("the dashboard's adverse actions: %+v", l)
	}
	r := decode[disputeJSON](t, e.bearer("POST", "/api/v1/admin/disputes/"+d.ID+"/resolve", admin,
		map[string]any{"resolution": "verified"}), 200)
	if r.ResolvedBy == nil || *r.ResolvedBy != "admin" {
		t.Fatalf("resolved %+v", r)
	}
	c := decode[checkJSON](t, e.do("GET", "/api/v1/checks/"+consider, a.TestKey, nil), 200)
	if c.Status != "complete" || *c.Assessment != "consider" {
		t.Fatalf("after verification the check is %s / %v", c.Status, *c.Assessment)
	}
	var onHold, signal bool
	var version int
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT on_hold, hold_signal_pending, hold_version FROM adverse_actions WHERE id = $1`,
		aa.ID).Scan(&onHold, &signal, &version); err != nil || onHold || !signal || version != 2 {
		t.Fatalf("on_hold %v, signal pending %v, version %d, %v: want released (version 2) and to be told", onHold, signal, version, err)
	}
	released := decode[adverseJSON](t, e.do("GET", "/api/v1/adverse-actions/"+aa.ID, a.TestKey, nil), 200)
	if moved := released.FinalizeAt.Sub(aa.FinalizeAt); moved < 48*time.Hour || moved > 48*time.Hour+time.Minute {
		t.Fatalf("the release moved finalize_at by %v, want the two days held", moved)
	}
	if got := e.eventTypesOf(consider); got[len(got)-1] != "dispute.resolved" {
		t.Fatalf("a verified dispute wrote %v", got)
	}
	// The admin cancels the adverse action from the dashboard.
	if got := decode[adverseJSON](t, e.bearer("POST", "/api/v1/admin/adverse-actions/"+aa.ID+"/cancel", admin, nil), 200); got.Status != "canceled" {
		t.Fatalf("canceled from the dashboard: %+v", got)
	}
}

// The account's default waiting period is the admin's to raise (never below five days).
func TestAccountWaitingDays(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	e.user(a.ID, "admin@days.test", bgcheck.RoleAdmin, "correct horse battery")
	admin := e.login("admin@days.test", "correct horse battery").AccessToken
	if got := decode[map[string]any](t, e.bearer("GET", "/api/v1/admin/settings", admin, nil), 200); got["adverse_action_waiting_days"] != float64(5) {
		t.Fatalf("settings %v", got)
	}
	wantFieldError(t, e.bearer("PATCH", "/api/v1/admin/settings", admin, map[string]any{"adverse_action_waiting_days": 3}), "adverse_action_waiting_days")
	decode[map[string]any](t, e.bearer("PATCH", "/api/v1/admin/settings", admin, map[string]any{"adverse_action_waiting_days": 7}), 200)
	cand := e.candidateWithEmail(a.TestKey, "jane@example.com")
	consider := e.completeCheck(a.TestKey, cand, "consider")
	aa := decode[adverseJSON](t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey,
		map[string]any{"reasons": []string{"x"}}), http.StatusCreated)
	if aa.WaitingDays != 7 {
		t.Fatalf("waiting days %d, want the account's 7", aa.WaitingDays)
	}
}
