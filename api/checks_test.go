package api_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

type checkJSON struct {
	ID          string  `json:"id"`
	CheckID     string  `json:"check_id"`
	CandidateID string  `json:"candidate_id"`
	Package     string  `json:"package"`
	Status      string  `json:"status"`
	Assessment  *string `json:"assessment"`
	Reason      *string `json:"reason"`
	Screenings  []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"screenings"`
}

func (e *env) candidateWithEmail(key, email string) string {
	e.t.Helper()
	c := decode[struct{ ID string }](e.t, e.do("POST", "/api/v1/candidates", key, map[string]any{
		"first_name": "Jane", "last_name": "Doe", "email": email}), http.StatusCreated)
	return c.ID
}

// Checks are created, listed, shown and canceled within the key's account and mode only; a live
// check is refused (no provider) rather than faked; a finished check cannot be canceled again.
func TestChecksLifecycleAndIsolation(t *testing.T) {
	e, _ := newPortalEnv(t)
	a, b := e.newAccount(), e.newAccount()
	cand := e.candidateWithEmail(a.TestKey, "jane@example.com")
	liveCand := e.candidateWithEmail(a.LiveKey, "jane.live@example.com")

	pkgs := decode[struct{ Data []struct{ Slug string } }](t, e.do("GET", "/api/v1/packages", a.TestKey, nil), 200)
	if len(pkgs.Data) != 4 || pkgs.Data[0].Slug != "basic" {
		t.Fatalf("packages %+v", pkgs)
	}

	c := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": cand, "package": "standard"}), http.StatusCreated)
	if c.Status != "invitation_pending" || c.Package != "standard" || len(c.Screenings) != 4 || c.CheckID != bgcheck.CheckUUID(c.ID) || c.Assessment != nil {
		t.Fatalf("created %+v", c)
	}
	wantFieldError(t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": cand, "package": "platinum"}), "package")
	wantFieldError(t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"package": "basic"}), "candidate_id")
	noEmail := decode[struct{ ID string }](t, e.do("POST", "/api/v1/candidates", a.TestKey, map[string]any{"first_name": "No", "last_name": "Mail"}), 201)
	wantFieldError(t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": noEmail.ID, "package": "basic"}), "candidate_id")
	wantProblem(t, e.do("POST", "/api/v1/checks", a.LiveKey, map[string]any{"candidate_id": liveCand, "package": "basic"}), 422, bgcheck.CodeNoProvider)
	// Another account's or mode's candidate is 404, and so is the check to them.
	wantProblem(t, e.do("POST", "/api/v1/checks", b.TestKey, map[string]any{"candidate_id": cand, "package": "basic"}), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": liveCand, "package": "basic"}), 404, bgcheck.CodeNotFound)
	for _, key := range []string{b.TestKey, a.LiveKey} {
		wantProblem(t, e.do("GET", "/api/v1/checks/"+c.ID, key, nil), 404, bgcheck.CodeNotFound)
		wantProblem(t, e.do("POST", "/api/v1/checks/"+c.ID+"/cancel", key, nil), 404, bgcheck.CodeNotFound)
		if l := decode[pageJSON[checkJSON]](t, e.do("GET", "/api/v1/checks", key, nil), 200); len(l.Data) != 0 {
			t.Fatalf("another tenant lists %+v", l.Data)
		}
	}
	list := decode[pageJSON[checkJSON]](t, e.do("GET", "/api/v1/checks?status=invitation_pending", a.TestKey, nil), 200)
	if len(list.Data) != 1 || list.Data[0].ID != c.ID {
		t.Fatalf("list %+v", list)
	}
	wantFieldError(t, e.do("GET", "/api/v1/checks?status=done", a.TestKey, nil), "status")
	wantProblem(t, e.do("GET", "/api/v1/checks/"+c.ID+"/report", a.TestKey, nil), 404, bgcheck.CodeNotFound)
	// Scopes: checks:read cannot create.
	readOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeChecksRead}})
	wantProblem(t, e.do("POST", "/api/v1/checks", readOnly, map[string]any{"candidate_id": cand, "package": "basic"}), 403, bgcheck.CodeInsufficientScope)

	canceled := decode[checkJSON](t, e.do("POST", "/api/v1/checks/"+c.ID+"/cancel", a.TestKey, nil), 200)
	if canceled.Status != "canceled" || canceled.Reason == nil || *canceled.Reason != bgcheck.ReasonCanceledByCustomer {
		t.Fatalf("canceled %+v", canceled)
	}
	for _, s := range canceled.Screenings {
		if s.Status != "canceled" {
			t.Fatalf("screening after cancel %+v", s)
		}
	}
	wantProblem(t, e.do("POST", "/api/v1/checks/"+c.ID+"/cancel", a.TestKey, nil), 409, bgcheck.CodeCheckFinished)
	// check.created then check.failed (status canceled), each written with its change.
	events := decode[pageJSON[struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}]](t, e.do("GET", "/api/v1/events", a.TestKey, nil), 200)
	var types []string
	for _, ev := range events.Data {
		if ev.Data["check_id"] == c.CheckID {
			types = append(types, ev.Type)
		}
	}
	if strings.Join(types, ",") != "check.failed,check.created" { // newest first
		t.Fatalf("events %v", types)
	}
}

// The invitation signs the candidate in as a consumer who sees their own checks only; consent
// takes the SSN, which is never shown again but for its last four digits.
func TestCandidateAuthorizesThroughTheInvitation(t *testing.T) {
	e, _ := newPortalEnv(t)
	a := e.newAccount()
	jane := e.candidateWithEmail(a.TestKey, "jane@example.com")
	olga := e.candidateWithEmail(a.TestKey, "olga@example.com")
	c := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": jane, "package": "basic"}), 201)
	other := decode[checkJSON](t, e.do("POST", "/api/v1/checks", a.TestKey, map[string]any{"candidate_id": olga, "package": "basic"}), 201)
	token := "an-invitation-token-for-jane-0123456789"
	hash := sha256.Sum256([]byte(token))
	if err := e.db.CreateInvitation(context.Background(), c.ID, hash[:], time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, e.do("POST", "/api/v1/auth/invitation", "", map[string]any{"token": "not-a-token"}), 401, bgcheck.CodeInvalidInvitation)
	session := decode[struct {
		AccessToken string `json:"access_token"`
		CheckID     string `json:"check_id"`
	}](t, e.do("POST", "/api/v1/auth/invitation", "", map[string]any{"token": token}), 200)
	if session.CheckID != c.ID {
		t.Fatalf("session %+v", session)
	}
	mine := decode[pageJSON[checkJSON]](t, e.bearer("GET", "/api/v1/consumer/checks", session.AccessToken, nil), 200)
	if len(mine.Data) != 1 || mine.Data[0].ID != c.ID {
		t.Fatalf("the candidate sees %+v", mine.Data)
	}
	wantProblem(t, e.bearer("GET", "/api/v1/consumer/checks/"+other.ID, session.AccessToken, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.bearer("POST", "/api/v1/consumer/checks/"+other.ID+"/authorize", session.AccessToken,
		map[string]any{"ssn": "111-11-2001", "address": "1 Main St", "consent": true}), 404, bgcheck.CodeNotFound)
	wantFieldError(t, e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", session.AccessToken,
		map[string]any{"ssn": "111-11-2001", "address": "1 Main St", "consent": false}), "consent")
	wantFieldError(t, e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", session.AccessToken,
		map[string]any{"ssn": "12345", "address": "1 Main St", "consent": true}), "ssn")
	r := e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", session.AccessToken,
		map[string]any{"ssn": "111-11-2001", "address": "1 Main St", "consent": true})
	got := decode[map[string]any](t, r, 200)
	if got["status"] != "pending" || got["ssn_last4"] != "2001" || strings.Contains(string(r.Body), "111112001") || strings.Contains(string(r.Body), "111-11") {
		t.Fatalf("authorized: %s", r.Body)
	}
	var sealed []byte
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT sealed FROM candidate_details WHERE candidate_id = $1`, jane).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "111112001") {
		t.Fatal("the SSN is stored in the clear")
	}
	wantProblem(t, e.bearer("POST", "/api/v1/consumer/checks/"+c.ID+"/authorize", session.AccessToken,
		map[string]any{"ssn": "111-11-2001", "address": "1 Main St", "consent": true}), 409, bgcheck.CodeCheckFinished)
	// An admin's token is not a consumer's; an API key sees the consent as a pending check.
	admin := e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")
	_ = admin
	wantProblem(t, e.bearer("GET", "/api/v1/consumer/checks", e.login("admin@acme.test", "correct horse battery").AccessToken, nil), 403, bgcheck.CodeForbidden)
	if c := decode[checkJSON](t, e.do("GET", "/api/v1/checks/"+c.ID, a.TestKey, nil), 200); c.Status != "pending" {
		t.Fatalf("after consent the check is %s", c.Status)
	}
}
