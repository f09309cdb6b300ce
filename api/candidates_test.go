package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/webhook"
)

const candidates = "/api/v1/candidates"

type candidateJSON struct {
	ID        string    `json:"id"`
	Mode      string    `json:"mode"`
	FirstName string    `json:"first_name"`
	LastName  string    `json:"last_name"`
	Email     *string   `json:"email"`
	Phone     *string   `json:"phone"`
	DOB       *string   `json:"dob"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (e *env) createCandidate(key string, body map[string]any) candidateJSON {
	e.t.Helper()
	return decode[candidateJSON](e.t, e.do("POST", candidates, key, body), http.StatusCreated)
}

func (e *env) events(t *testing.T, accountID string, mode bgcheck.Mode) []*bgcheck.Event {
	t.Helper()
	page, err := e.db.ListEvents(context.Background(), bgcheck.Tenant{AccountID: accountID, Mode: mode}, "", bgcheck.ListParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Data
}

func TestCandidateCRUD(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	c := e.createCandidate(a.TestKey, map[string]any{
		"first_name": "Jane", "last_name": "Doe", "email": "jane@example.com", "phone": "+14155550100", "dob": "1990-02-03",
	})
	if !bgcheck.ValidID("cand", c.ID) || c.Mode != "test" || c.FirstName != "Jane" || *c.Email != "jane@example.com" ||
		*c.Phone != "+14155550100" || *c.DOB != "1990-02-03" {
		t.Fatalf("created %+v", c)
	}
	minimal := e.createCandidate(a.TestKey, map[string]any{"first_name": "Li", "last_name": "Wu", "email": ""})
	if minimal.Email != nil || minimal.Phone != nil || minimal.DOB != nil {
		t.Fatalf("absent optional fields should be null: %+v", minimal)
	}

	got := decode[candidateJSON](t, e.do("GET", candidates+"/"+c.ID, a.TestKey, nil), 200)
	if got.ID != c.ID || got.LastName != "Doe" {
		t.Fatalf("get %+v", got)
	}
	list := decode[pageJSON[candidateJSON]](t, e.do("GET", candidates+"?limit=1", a.TestKey, nil), 200)
	if len(list.Data) != 1 || list.Data[0].ID != minimal.ID || !list.HasMore {
		t.Fatalf("list page 1: %+v", list)
	}
	list2 := decode[pageJSON[candidateJSON]](t, e.do("GET", candidates+"?limit=1&cursor="+*list.NextCursor, a.TestKey, nil), 200)
	if len(list2.Data) != 1 || list2.Data[0].ID != c.ID || list2.HasMore {
		t.Fatalf("list page 2: %+v", list2)
	}

	if r := e.do("DELETE", candidates+"/"+c.ID, a.TestKey, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", r.Status)
	}
	wantProblem(t, e.do("GET", candidates+"/"+c.ID, a.TestKey, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.do("DELETE", candidates+"/"+c.ID, a.TestKey, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, e.do("PATCH", candidates+"/"+c.ID, a.TestKey, map[string]any{"first_name": "X"}), 404, bgcheck.CodeNotFound)
}

// A PATCH that changes a candidate writes one candidate.updated event whose data is the candidate
// as the PATCH left it, in the same transaction.
func TestCandidateUpdateWritesEvent(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	c := e.createCandidate(a.TestKey, map[string]any{"first_name": "Jane", "last_name": "Doe", "phone": "+14155550100"})
	if n := len(e.events(t, a.ID, bgcheck.ModeTest)); n != 0 {
		t.Fatalf("create wrote %d events", n)
	}

	upd := decode[candidateJSON](t, e.do("PATCH", candidates+"/"+c.ID, a.TestKey, map[string]any{
		"last_name": "Roe", "email": "jane@example.com", "phone": "",
	}), 200)
	if upd.LastName != "Roe" || upd.FirstName != "Jane" || upd.Email == nil || *upd.Email != "jane@example.com" || upd.Phone != nil {
		t.Fatalf("patched %+v", upd)
	}
	if !upd.UpdatedAt.After(c.UpdatedAt) {
		t.Fatal("updated_at did not move")
	}
	evs := e.events(t, a.ID, bgcheck.ModeTest)
	if len(evs) != 1 {
		t.Fatalf("%d events after one change, want 1", len(evs))
	}
	ev := evs[0]
	var env webhook.Envelope
	if err := json.Unmarshal(ev.Body, &env); err != nil {
		t.Fatal(err)
	}
	if !bgcheck.ValidID("evt", ev.ID) || env.ID != ev.ID || env.Type != "candidate.updated" || ev.Type != "candidate.updated" ||
		!env.CreatedAt.Equal(ev.CreatedAt) {
		t.Fatalf("event row %+v / envelope %+v", ev, env)
	}
	var data candidateJSON
	if err := json.Unmarshal(env.Data, &data); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(data, upd) {
		t.Fatalf("event data %+v\nwant the patched candidate %+v", data, upd)
	}

	// A PATCH that changes nothing writes no event; a refused PATCH changes nothing either.
	decode[candidateJSON](t, e.do("PATCH", candidates+"/"+c.ID, a.TestKey, map[string]any{"last_name": "Roe"}), 200)
	wantFieldError(t, e.do("PATCH", candidates+"/"+c.ID, a.TestKey, map[string]any{"last_name": "Poe", "dob": "yesterday"}), "dob")
	wantProblem(t, e.do("PATCH", candidates+"/"+c.ID, a.TestKey, `{"last_name":"Poe","ssn":"1"}`), 400, bgcheck.CodeMalformedJSON)
	if n := len(e.events(t, a.ID, bgcheck.ModeTest)); n != 1 {
		t.Fatalf("%d events, want still 1", n)
	}
	if now := decode[candidateJSON](t, e.do("GET", candidates+"/"+c.ID, a.TestKey, nil), 200); now.LastName != "Roe" {
		t.Fatalf("a refused PATCH changed the candidate: %+v", now)
	}
	// Events stay in their tenant.
	if n := len(e.events(t, a.ID, bgcheck.ModeLive)); n != 0 {
		t.Fatalf("%d live events from a test-mode change", n)
	}
}

func TestCandidateValidation(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	ok := map[string]any{"first_name": "Jane", "last_name": "Doe"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"missing first name", map[string]any{"last_name": "Doe"}, "first_name"},
		{"blank last name", with("last_name", "  "), "last_name"},
		{"long first name", with("first_name", string(make([]byte, 101))), "first_name"},
		{"bad email", with("email", "not-an-email"), "email"},
		{"email with name", with("email", "Jane <jane@example.com>"), "email"},
		{"bad phone", with("phone", "555-0100"), "phone"},
		{"dob not a date", with("dob", "03/02/1990"), "dob"},
		{"dob in the future", with("dob", time.Now().AddDate(1, 0, 0).Format(time.DateOnly)), "dob"},
		{"dob impossible", with("dob", "1990-02-30"), "dob"},
		{"name not a string", with("first_name", 7), "first_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantFieldError(t, e.do("POST", candidates, a.TestKey, c.body), c.field)
		})
	}
	wantProblem(t, e.do("POST", candidates, a.TestKey, `{"first_name":"A","last_name":"B","middle":"C"}`), 400, bgcheck.CodeMalformedJSON)
	if list := decode[pageJSON[candidateJSON]](t, e.do("GET", candidates, a.TestKey, nil), 200); len(list.Data) != 0 {
		t.Fatalf("refused requests created %d candidates", len(list.Data))
	}
}

func TestCandidateScopesAndIsolation(t *testing.T) {
	e := newEnv(t, api.Options{})
	a, b := e.newAccount(), e.newAccount()
	reader, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeCandidatesRead}})
	writer, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeCandidatesWrite}})
	webhooks, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksRead, bgcheck.ScopeWebhooksWrite}})
	body := map[string]any{"first_name": "Jane", "last_name": "Doe"}

	c := e.createCandidate(writer, body)
	path := candidates + "/" + c.ID
	wantProblem(t, e.do("POST", candidates, reader, body), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("PATCH", path, reader, map[string]any{"first_name": "J"}), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("DELETE", path, reader, nil), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("GET", candidates, writer, nil), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("GET", path, writer, nil), 403, bgcheck.CodeInsufficientScope)
	wantProblem(t, e.do("GET", candidates, webhooks, nil), 403, bgcheck.CodeInsufficientScope)
	decode[candidateJSON](t, e.do("GET", path, reader, nil), 200)

	for name, key := range map[string]string{"live key": a.LiveKey, "other account": b.TestKey} {
		t.Run(name, func(t *testing.T) {
			wantProblem(t, e.do("GET", path, key, nil), 404, bgcheck.CodeNotFound)
			wantProblem(t, e.do("PATCH", path, key, map[string]any{"first_name": "Mallory"}), 404, bgcheck.CodeNotFound)
			wantProblem(t, e.do("DELETE", path, key, nil), 404, bgcheck.CodeNotFound)
			if list := decode[pageJSON[candidateJSON]](t, e.do("GET", candidates, key, nil), 200); len(list.Data) != 0 {
				t.Fatal("candidate visible across tenants")
			}
		})
	}
	if got := decode[candidateJSON](t, e.do("GET", path, a.TestKey, nil), 200); got.FirstName != "Jane" {
		t.Fatal("another tenant changed the candidate")
	}
}
