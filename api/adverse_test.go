package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

type adverseJSON struct {
	ID          string    `json:"id"`
	Check       string    `json:"check"`
	CheckID     string    `json:"check_id"`
	Status      string    `json:"status"`
	Reasons     []string  `json:"reasons"`
	WaitingDays int       `json:"waiting_days"`
	FinalizeAt  time.Time `json:"finalize_at"`
}

// completeCheck makes a check of the candidate and completes it with the given result on its
// national criminal search, as the workflow would.
func (e *env) completeCheck(key, candidate, result string) string {
	e.t.Helper()
	c := decode[checkJSON](e.t, e.do("POST", "/api/v1/checks", key, map[string]any{"candidate_id": candidate, "package": "basic"}), 201)
	ctx := context.Background()
	for _, typ := range []string{"ssn_trace", "national_criminal"} {
		res := "clear"
		if typ == "national_criminal" {
			res = result
		}
		if err := e.db.RecordScreening(ctx, postgres.ScreeningUpdate{CheckID: c.ID, Type: typ, Status: "complete", Result: res}); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := e.db.CompleteCheck(ctx, c.ID); err != nil {
		e.t.Fatal(err)
	}
	return c.ID
}

// An adverse action needs a complete consider check, one at a time; it waits at least five
// business days; another tenant sees nothing of it; a withdrawn one cannot be withdrawn again.
func TestAdverseActions(t *testing.T) {
	e, _ := newPortalEnv(t)
	a, b := e.newAccount(), e.newAccount()
	cand := e.candidateWithEmail(a.TestKey, "jane@example.com")
	consider := e.completeCheck(a.TestKey, cand, "consider")
	clear := e.completeCheck(a.TestKey, cand, "clear")
	pending := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": cand, "package": "basic"}), 201).ID
	body := map[string]any{"reasons": []string{"a conviction relevant to the role"}}

	wantProblem(t, e.do("POST", "/api/v1/checks/"+pending+"/adverse-actions", a.TestKey, body), 409, bgcheck.CodeCheckNotAdverse)
	wantProblem(t, e.do("POST", "/api/v1/checks/"+clear+"/adverse-actions", a.TestKey, body), 409, bgcheck.CodeCheckNotAdverse)
	wantFieldError(t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey, map[string]any{"reasons": []string{}}), "reasons")
	wantFieldError(t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey,
		map[string]any{"reasons": []string{"x"}, "waiting_days": 3}), "waiting_days")
	wantProblem(t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", b.TestKey, body), 404, bgcheck.CodeNotFound)

	before := time.Now()
	aa := decode[adverseJSON](t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey, body), http.StatusCreated)
	if aa.Status != "pending" || aa.WaitingDays != 5 || aa.Check != consider || aa.CheckID != bgcheck.CheckUUID(consider) {
		t.Fatalf("created %+v", aa)
	}
	if lo, hi := bgcheck.AddBusinessDays(before, 5), bgcheck.AddBusinessDays(time.Now(), 5); aa.FinalizeAt.Before(lo.Add(-time.Second)) || aa.FinalizeAt.After(hi.Add(time.Second)) {
		t.Fatalf("finalize_at %s, want five business days from now (%s)", aa.FinalizeAt, lo)
	}
	wantProblem(t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey, body), 409, bgcheck.CodeAdverseActionOpen)
	wantProblem(t, e.do("GET", "/api/v1/adverse-actions/"+aa.ID, b.TestKey, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.do("GET", "/api/v1/adverse-actions/"+aa.ID, a.LiveKey, nil), 404, bgcheck.CodeNotFound)
	if l := decode[pageJSON[adverseJSON]](t, e.do("GET", "/api/v1/adverse-actions?check="+consider, a.TestKey, nil), 200); len(l.Data) != 1 {
		t.Fatalf("list %+v", l)
	}
	canceled := decode[adverseJSON](t, e.do("POST", "/api/v1/adverse-actions/"+aa.ID+"/cancel", a.TestKey, nil), 200)
	if canceled.Status != "canceled" {
		t.Fatalf("canceled %+v", canceled)
	}
	wantProblem(t, e.do("POST", "/api/v1/adverse-actions/"+aa.ID+"/cancel", a.TestKey, nil), 409, bgcheck.CodeAdverseActionClosed)
	// Withdrawn, it no longer blocks a new one.
	decode[adverseJSON](t, e.do("POST", "/api/v1/checks/"+consider+"/adverse-actions", a.TestKey, body), http.StatusCreated)
	var created int
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'adverse_action.created'`).Scan(&created); err != nil || created != 2 {
		t.Fatalf("%d adverse_action.created events, %v", created, err)
	}
}
