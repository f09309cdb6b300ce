package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

type eventJSON struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

type deliveryJSON struct {
	ID           string `json:"id"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	EndpointID   string `json:"endpoint_id"`
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	Attempts     []struct {
		Number     int    `json:"number"`
		StatusCode *int   `json:"status_code"`
		Error      string `json:"error"`
	} `json:"attempts"`
}

func TestTestEvents(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	all := e.createEndpoint(a.TestKey, "https://example.com/all")
	r := e.do("POST", "/api/v1/events/test", a.TestKey, map[string]any{"type": "check.completed"})
	ev := decode[eventJSON](t, r, http.StatusCreated)
	if !bgcheck.ValidID("evt", ev.ID) || ev.Type != "check.completed" || r.Header.Get("Location") != "/api/v1/events/"+ev.ID {
		t.Fatalf("event %+v, Location %q", ev, r.Header.Get("Location"))
	}
	var data map[string]any
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(data["check_id"].(string)); err != nil || data["status"] == nil || data["disposition"] == nil {
		t.Fatalf("sample check.completed data %v", data)
	}
	// Every type has sample data; given data is sent as given.
	for _, typ := range webhook.EventTypes {
		decode[eventJSON](t, e.do("POST", "/api/v1/events/test", a.TestKey, map[string]any{"type": typ}), http.StatusCreated)
	}
	custom := decode[eventJSON](t, e.do("POST", "/api/v1/events/test", a.TestKey,
		`{"type":"report.ready","data":{"report_id":"r_1","nested":{"x":[1,2]}}}`), http.StatusCreated)
	if string(custom.Data) != `{"report_id":"r_1","nested":{"x":[1,2]}}` {
		t.Fatalf("data %s", custom.Data)
	}

	// The event's deliveries exist, one per subscribed endpoint.
	page := decode[pageJSON[deliveryJSON]](t, e.do("GET", endpoints+"/"+all.ID+"/deliveries", a.TestKey, nil), 200)
	if len(page.Data) != 11 || page.Data[len(page.Data)-1].EventID != ev.ID || page.Data[0].Status != "pending" {
		t.Fatalf("%d deliveries: %+v", len(page.Data), page.Data)
	}

	wantProblem(t, e.do("POST", "/api/v1/events/test", a.LiveKey, map[string]any{"type": "check.completed"}), 403, bgcheck.CodeTestModeOnly)
	for name, body := range map[string]any{
		"missing type":      map[string]any{},
		"unknown type":      map[string]any{"type": "check.exploded"},
		"data not object":   map[string]any{"type": "report.ready", "data": []int{1}},
		"check_id not uuid": map[string]any{"type": "check.completed", "data": map[string]any{"check_id": "x", "status": "a", "disposition": "b"}},
		"no disposition":    map[string]any{"type": "check.completed", "data": map[string]any{"check_id": uuid.NewString(), "status": "a"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("POST", "/api/v1/events/test", a.TestKey, body)
			if r.Status != 422 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	wantProblem(t, e.do("POST", "/api/v1/events/test", a.TestKey, `{"type":"report.ready","extra":1}`), 400, bgcheck.CodeMalformedJSON)
	readOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksRead}})
	wantProblem(t, e.do("POST", "/api/v1/events/test", readOnly, map[string]any{"type": "report.ready"}), 403, bgcheck.CodeInsufficientScope)
}

func TestEventListAndGet(t *testing.T) {
	e := newEnv(t, api.Options{})
	a, b := e.newAccount(), e.newAccount()
	var ids []string
	for _, typ := range []string{"check.created", "report.ready", "check.created"} {
		ids = append(ids, decode[eventJSON](t, e.do("POST", "/api/v1/events/test", a.TestKey, map[string]any{"type": typ}), 201).ID)
	}
	page := decode[pageJSON[eventJSON]](t, e.do("GET", "/api/v1/events?limit=2", a.TestKey, nil), 200)
	if len(page.Data) != 2 || page.Data[0].ID != ids[2] || !page.HasMore {
		t.Fatalf("page %+v", page)
	}
	page = decode[pageJSON[eventJSON]](t, e.do("GET", "/api/v1/events?type=check.created", a.TestKey, nil), 200)
	if len(page.Data) != 2 || page.Data[0].ID != ids[2] || page.Data[1].ID != ids[0] {
		t.Fatalf("filtered %+v", page)
	}
	wantFieldError(t, e.do("GET", "/api/v1/events?type=nope", a.TestKey, nil), "type")

	// GET returns exactly the stored envelope bytes, which deliveries send.
	r := e.do("GET", "/api/v1/events/"+ids[1], a.TestKey, nil)
	stored, err := e.db.FindEvent(context.Background(), bgcheck.Tenant{AccountID: a.ID, Mode: bgcheck.ModeTest}, ids[1])
	if err != nil || r.Status != 200 || string(r.Body) != string(stored.Body)+"\n" {
		t.Fatalf("GET body %s\nstored   %s (%v)", r.Body, stored.Body, err)
	}
	for _, key := range []string{a.LiveKey, b.TestKey} {
		wantProblem(t, e.do("GET", "/api/v1/events/"+ids[1], key, nil), 404, bgcheck.CodeNotFound)
		if p := decode[pageJSON[eventJSON]](t, e.do("GET", "/api/v1/events", key, nil), 200); len(p.Data) != 0 {
			t.Fatal("events visible across tenants")
		}
	}
}

func TestDeliveriesViewAndRedeliver(t *testing.T) {
	e := newEnv(t, api.Options{})
	a, b := e.newAccount(), e.newAccount()
	ep := e.createEndpoint(a.TestKey, "https://example.com/hook")
	e.do("POST", "/api/v1/events/test", a.TestKey, map[string]any{"type": "dispute.filed"})
	list := decode[pageJSON[deliveryJSON]](t, e.do("GET", endpoints+"/"+ep.ID+"/deliveries", a.TestKey, nil), 200)
	d := list.Data[0]
	path := "/api/v1/webhooks/deliveries/" + d.ID

	got := decode[deliveryJSON](t, e.do("GET", path, a.TestKey, nil), 200)
	if got.Status != "pending" || got.EndpointID != ep.ID || got.EventType != "dispute.filed" || got.Attempts == nil || len(got.Attempts) != 0 {
		t.Fatalf("delivery %+v (attempts must be [] before any)", got)
	}
	p := wantProblem(t, e.do("POST", path+"/redeliver", a.TestKey, nil), 409, bgcheck.CodeDeliveryInProgress)
	if p.Detail == "" {
		t.Fatal("no detail")
	}

	// As the worker would: attempt 1 fails and, with the schedule spent, the delivery fails.
	if err := e.db.RecordAttempt(context.Background(), postgres.AttemptRecord{DeliveryID: d.ID, Number: 1, StartedAt: time.Now(),
		StatusCode: 503, Error: "the endpoint answered 503", ResponseSnippet: "down", Status: bgcheck.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}
	got = decode[deliveryJSON](t, e.do("GET", path, a.TestKey, nil), 200)
	if got.Status != "failed" || got.AttemptCount != 1 || len(got.Attempts) != 1 || *got.Attempts[0].StatusCode != 503 {
		t.Fatalf("after a failed attempt: %+v", got)
	}
	failed := decode[pageJSON[deliveryJSON]](t, e.do("GET", endpoints+"/"+ep.ID+"/deliveries?status=failed", a.TestKey, nil), 200)
	pending := decode[pageJSON[deliveryJSON]](t, e.do("GET", endpoints+"/"+ep.ID+"/deliveries?status=pending", a.TestKey, nil), 200)
	if len(failed.Data) != 1 || len(pending.Data) != 0 {
		t.Fatalf("status filter: %d failed, %d pending", len(failed.Data), len(pending.Data))
	}
	wantFieldError(t, e.do("GET", endpoints+"/"+ep.ID+"/deliveries?status=lost", a.TestKey, nil), "status")

	for _, key := range []string{a.LiveKey, b.TestKey} {
		wantProblem(t, e.do("GET", path, key, nil), 404, bgcheck.CodeNotFound)
		wantProblem(t, e.do("POST", path+"/redeliver", key, nil), 404, bgcheck.CodeNotFound)
		wantProblem(t, e.do("GET", endpoints+"/"+ep.ID+"/deliveries", key, nil), 404, bgcheck.CodeNotFound)
	}
	readOnly, _ := e.newKey(a.ID, keyOpts{scopes: []string{bgcheck.ScopeWebhooksRead}})
	wantProblem(t, e.do("POST", path+"/redeliver", readOnly, nil), 403, bgcheck.CodeInsufficientScope)

	re := decode[deliveryJSON](t, e.do("POST", path+"/redeliver", a.TestKey, nil), http.StatusAccepted)
	if re.ID != d.ID || re.Status != "pending" || re.EventID != d.EventID {
		t.Fatalf("redeliver answered %+v", re)
	}
	if n, _ := e.db.CountUndispatched(context.Background()); n != 1 {
		t.Fatalf("%d deliveries wait for a workflow after redeliver, want 1", n)
	}
}
