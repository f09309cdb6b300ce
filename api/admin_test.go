package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/postgres"
)

const (
	adminPath     = "/api/v1/admin"
	adminPassword = "correct horse battery"
)

// adminScene is two accounts, A and B, each with a signed-in admin, and a signed-in consumer who
// belongs to A (so only the role, not the account, keeps them out).
type adminScene struct {
	*env
	a, b           account
	adminA, adminB string // access tokens
	consumer       string
}

func newAdminScene(t *testing.T, opts ...api.Options) *adminScene {
	e, _ := newPortalEnv(t, opts...)
	s := &adminScene{env: e, a: e.newAccount(), b: e.newAccount()}
	e.user(s.a.ID, "admin@a.test", bgcheck.RoleAdmin, adminPassword)
	e.user(s.b.ID, "admin@b.test", bgcheck.RoleAdmin, adminPassword)
	e.user(s.a.ID, "consumer@a.test", bgcheck.RoleConsumer, adminPassword)
	s.adminA = e.login("admin@a.test", adminPassword).AccessToken
	s.adminB = e.login("admin@b.test", adminPassword).AccessToken
	s.consumer = e.login("consumer@a.test", adminPassword).AccessToken
	return s
}

type adminDeliveryJSON struct {
	ID             string     `json:"id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	EndpointID     string     `json:"endpoint_id"`
	Mode           string     `json:"mode"`
	Status         string     `json:"status"`
	AttemptCount   int        `json:"attempt_count"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	LastStatusCode *int       `json:"last_status_code"`
	LastError      *string    `json:"last_error"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

type overviewJSON struct {
	Account struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"account"`
	Counts struct {
		Candidates       int `json:"candidates"`
		Checks           int `json:"checks"`
		WebhookEndpoints int `json:"webhook_endpoints"`
		Events24h        int `json:"events_24h"`
	} `json:"counts"`
	Deliveries struct {
		Pending   int `json:"pending"`
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		Canceled  int `json:"canceled"`
	} `json:"deliveries"`
	FailedDeliveries []adminDeliveryJSON `json:"failed_deliveries"`
}

// emit creates an event in the account and mode, as the service would, and returns the id of its
// delivery to each endpoint given, in order.
func (s *adminScene) emit(accountID string, mode bgcheck.Mode, eventType string, endpointIDs ...string) []string {
	s.t.Helper()
	// Delivery ids are UUIDv7 made in SQL, ordered to the millisecond only: events of one
	// millisecond may list in either order. Keep each in its own, so "newest first" is testable.
	time.Sleep(2 * time.Millisecond)
	ev, err := s.db.CreateEvent(context.Background(), bgcheck.Tenant{AccountID: accountID, Mode: mode}, eventType, map[string]any{"n": 1})
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for _, ep := range endpointIDs {
		var id string
		if err := s.db.Pool().QueryRow(context.Background(), `SELECT id FROM deliveries WHERE event_id = $1 AND endpoint_id = $2`,
			ev.ID, ep).Scan(&id); err != nil {
			s.t.Fatalf("no delivery of %s to %s: %v", ev.ID, ep, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// finish records a first attempt that ends the delivery as the worker would: 200 and succeeded,
// or 503 and failed.
func (s *adminScene) finish(deliveryID string, status bgcheck.DeliveryStatus) {
	s.t.Helper()
	rec := postgres.AttemptRecord{DeliveryID: deliveryID, Number: 1, StartedAt: time.Now(), Duration: time.Millisecond, StatusCode: 200, Status: status}
	if status == bgcheck.DeliveryFailed {
		rec.StatusCode, rec.Error = 503, "the endpoint answered 503"
	}
	if err := s.db.RecordAttempt(context.Background(), rec); err != nil {
		s.t.Fatal(err)
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, x := range items {
		out[i] = id(x)
	}
	return out
}

func deliveryIDs(ds []adminDeliveryJSON) []string {
	return ids(ds, func(d adminDeliveryJSON) string { return d.ID })
}

func TestAdminRoutesAreForAdminsOnly(t *testing.T) {
	s := newAdminScene(t)
	dlv, key := bgcheck.NewID(bgcheck.PrefixDelivery), bgcheck.NewID(bgcheck.PrefixAPIKey)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", adminPath + "/overview", nil},
		{"GET", adminPath + "/deliveries", nil},
		{"POST", adminPath + "/deliveries/" + dlv + "/redeliver", nil},
		{"GET", adminPath + "/deliveries/" + dlv, nil},
		{"GET", adminPath + "/webhook-endpoints", nil},
		{"POST", adminPath + "/api-keys", map[string]any{"mode": "test"}},
		{"GET", adminPath + "/api-keys", nil},
		{"DELETE", adminPath + "/api-keys/" + key, nil},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := s.doWith(c.method, c.path, c.body, nil)
			wantProblem(t, r, 401, bgcheck.CodeMissingToken)
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate %q", r.Header.Get("WWW-Authenticate"))
			}
			wantProblem(t, s.bearer(c.method, c.path, "not.a.token", c.body), 401, bgcheck.CodeInvalidToken)
			// An API key is no way in either, not even the account's own.
			wantProblem(t, s.do(c.method, c.path, s.a.TestKey, c.body), 401, bgcheck.CodeMissingToken)
			wantProblem(t, s.bearer(c.method, c.path, s.consumer, c.body), 403, bgcheck.CodeForbidden)
		})
	}
	// The consumer created no key on the way.
	if page := decode[pageJSON[apiKeyJSON]](t, s.bearer("GET", adminPath+"/api-keys", s.adminA, nil), 200); len(page.Data) != 2 {
		t.Fatalf("%d keys, want the 2 bootstrapped", len(page.Data))
	}
}

// The overview's numbers for a scene of every delivery status in both modes, candidates,
// endpoints (one deleted) and events (one older than a day), beside another account's data.
func TestAdminOverview(t *testing.T) {
	s := newAdminScene(t)
	ctx := context.Background()
	a, b := s.a, s.b

	s.createCandidate(a.TestKey, map[string]any{"first_name": "Jane", "last_name": "Doe"})
	s.createCandidate(a.TestKey, map[string]any{"first_name": "Li", "last_name": "Wu"})
	s.createCandidate(a.LiveKey, map[string]any{"first_name": "Ana", "last_name": "Silva"})
	testEP, gone := s.createEndpoint(a.TestKey, "https://example.com/a1"), s.createEndpoint(a.TestKey, "https://example.com/a2")
	liveEP := s.createEndpoint(a.LiveKey, "https://example.com/a3")

	t1 := s.emit(a.ID, bgcheck.ModeTest, "check.completed", testEP.ID, gone.ID) // → succeeded, canceled
	t2 := s.emit(a.ID, bgcheck.ModeTest, "report.ready", testEP.ID, gone.ID)    // → failed, canceled
	if r := s.do("DELETE", endpoints+"/"+gone.ID, a.TestKey, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete endpoint: %d %s", r.Status, r.Body)
	}
	s.finish(t1[0], bgcheck.DeliverySucceeded)
	s.finish(t2[0], bgcheck.DeliveryFailed)
	l1 := s.emit(a.ID, bgcheck.ModeLive, "check.failed", liveEP.ID)
	l2 := s.emit(a.ID, bgcheck.ModeLive, "dispute.filed", liveEP.ID)
	s.emit(a.ID, bgcheck.ModeLive, "dispute.resolved", liveEP.ID) // stays pending
	s.finish(l1[0], bgcheck.DeliveryFailed)
	s.finish(l2[0], bgcheck.DeliverySucceeded)
	// The first event happened more than a day ago.
	if _, err := s.db.Pool().Exec(ctx, `UPDATE events SET created_at = now() - interval '25 hours'
		WHERE id = (SELECT event_id FROM deliveries WHERE id = $1)`, t1[0]); err != nil {
		t.Fatal(err)
	}

	// Account B's data counts for B alone.
	s.createCandidate(b.LiveKey, map[string]any{"first_name": "Bo", "last_name": "B"})
	bEP := s.createEndpoint(b.TestKey, "https://example.com/b")
	bFailed := s.emit(b.ID, bgcheck.ModeTest, "check.created", bEP.ID)
	s.finish(bFailed[0], bgcheck.DeliveryFailed)

	r := s.bearer("GET", adminPath+"/overview", s.adminA, nil)
	got := decode[overviewJSON](t, r, 200)
	var want overviewJSON
	want.Account.ID, want.Account.Name = a.ID, "Acme"
	want.Counts.Candidates, want.Counts.Checks, want.Counts.WebhookEndpoints, want.Counts.Events24h = 3, 0, 2, 4
	want.Deliveries.Pending, want.Deliveries.Succeeded, want.Deliveries.Failed, want.Deliveries.Canceled = 1, 2, 2, 2
	failed := got.FailedDeliveries
	got.FailedDeliveries = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overview\n got %+v\nwant %+v", got, want)
	}
	if !slices.Equal(deliveryIDs(failed), []string{l1[0], t2[0]}) {
		t.Fatalf("failed deliveries %v, want newest first %v", deliveryIDs(failed), []string{l1[0], t2[0]})
	}
	if f := failed[0]; f.Mode != "live" || f.Status != "failed" || f.EventType != "check.failed" || f.EndpointID != liveEP.ID ||
		f.AttemptCount != 1 || *f.LastStatusCode != 503 || f.LastError == nil {
		t.Fatalf("failed delivery record %+v", f)
	}
	// Every field of the contract is there, checks included, and nothing else at the top (the
	// fifth is the hourly series, an array, which TestAdminOverviewHourly checks; the sixth the
	// live quota of checks, issue 15).
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &raw)
	var counts map[string]any
	_ = json.Unmarshal(raw["counts"], &counts)
	var quota map[string]any
	_ = json.Unmarshal(raw["quota"], &quota)
	if _, ok := counts["checks"]; !ok || len(raw) != 6 || raw["hourly"] == nil || quota["limit"] != float64(1000) || quota["used"] != float64(0) {
		t.Fatalf("overview body %s", r.Body)
	}

	gotB := decode[overviewJSON](t, s.bearer("GET", adminPath+"/overview", s.adminB, nil), 200)
	if gotB.Account.ID != b.ID || gotB.Counts.Candidates != 1 || gotB.Counts.WebhookEndpoints != 1 || gotB.Counts.Events24h != 1 ||
		gotB.Deliveries.Failed != 1 || gotB.Deliveries.Succeeded+gotB.Deliveries.Pending+gotB.Deliveries.Canceled != 0 ||
		!slices.Equal(deliveryIDs(gotB.FailedDeliveries), bFailed) {
		t.Fatalf("B's overview %+v", gotB)
	}

	// An account with nothing yet: zeros and an empty list, not null.
	empty := s.newAccount()
	s.user(empty.ID, "admin@empty.test", bgcheck.RoleAdmin, adminPassword)
	r = s.bearer("GET", adminPath+"/overview", s.login("admin@empty.test", adminPassword).AccessToken, nil)
	if o := decode[overviewJSON](t, r, 200); o.Counts.Candidates != 0 || o.Deliveries.Failed != 0 || !strings.Contains(string(r.Body), `"failed_deliveries":[]`) {
		t.Fatalf("empty overview %s", r.Body)
	}
}

// Of more failed deliveries than the overview shows, it shows the newest twenty.
func TestAdminOverviewShowsTheNewestTwentyFailures(t *testing.T) {
	s := newAdminScene(t)
	ep := s.createEndpoint(s.a.TestKey, "https://example.com/hook")
	var failed []string
	for range postgres.OverviewFailedDeliveries + 2 {
		d := s.emit(s.a.ID, bgcheck.ModeTest, "report.ready", ep.ID)[0]
		s.finish(d, bgcheck.DeliveryFailed)
		failed = append(failed, d)
	}
	slices.Reverse(failed)
	o := decode[overviewJSON](t, s.bearer("GET", adminPath+"/overview", s.adminA, nil), 200)
	if o.Deliveries.Failed != 22 || !slices.Equal(deliveryIDs(o.FailedDeliveries), failed[:20]) {
		t.Fatalf("%d failed, shown %v; want 22 and the newest 20", o.Deliveries.Failed, deliveryIDs(o.FailedDeliveries))
	}
}

func TestAdminDeliveries(t *testing.T) {
	s := newAdminScene(t)
	a := s.a
	testEP, liveEP := s.createEndpoint(a.TestKey, "https://example.com/t"), s.createEndpoint(a.LiveKey, "https://example.com/l")
	d1 := s.emit(a.ID, bgcheck.ModeTest, "check.completed", testEP.ID)[0]
	d2 := s.emit(a.ID, bgcheck.ModeLive, "check.completed", liveEP.ID)[0]
	d3 := s.emit(a.ID, bgcheck.ModeLive, "report.ready", liveEP.ID)[0]
	d4 := s.emit(a.ID, bgcheck.ModeTest, "report.ready", testEP.ID)[0]
	s.finish(d1, bgcheck.DeliveryFailed)
	s.finish(d3, bgcheck.DeliveryFailed)
	s.finish(d2, bgcheck.DeliverySucceeded)
	bEP := s.createEndpoint(s.b.TestKey, "https://example.com/b")
	bDelivery := s.emit(s.b.ID, bgcheck.ModeTest, "check.completed", bEP.ID)[0]
	s.finish(bDelivery, bgcheck.DeliveryFailed)

	list := func(query string) pageJSON[adminDeliveryJSON] {
		t.Helper()
		return decode[pageJSON[adminDeliveryJSON]](t, s.bearer("GET", adminPath+"/deliveries"+query, s.adminA, nil), 200)
	}
	all := list("")
	if !slices.Equal(deliveryIDs(all.Data), []string{d4, d3, d2, d1}) || all.HasMore || all.NextCursor != nil {
		t.Fatalf("all deliveries %v, want both modes newest first", deliveryIDs(all.Data))
	}
	if d := all.Data[1]; d.Mode != "live" || d.Status != "failed" || d.EventType != "report.ready" || d.EndpointID != liveEP.ID || d.AttemptCount != 1 {
		t.Fatalf("record %+v", d)
	}
	for query, want := range map[string][]string{
		"?status=failed":                               {d3, d1},
		"?status=pending":                              {d4},
		"?mode=live":                                   {d3, d2},
		"?mode=test&status=failed":                     {d1},
		"?event_type=check.completed":                  {d2, d1},
		"?endpoint_id=" + testEP.ID:                    {d4, d1},
		"?endpoint_id=" + bEP.ID:                       {}, // another account's endpoint: nothing
		"?status=canceled":                             {},
		"?endpoint_id=" + liveEP.ID + "&mode=test":     {},
		"?status=failed&event_type=report.ready&mode=": {d3},
	} {
		if got := deliveryIDs(list(query).Data); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}

	// Pages of two, by cursor.
	first := list("?limit=2")
	if !slices.Equal(deliveryIDs(first.Data), []string{d4, d3}) || !first.HasMore || first.NextCursor == nil {
		t.Fatalf("first page %+v", first)
	}
	second := list("?limit=2&cursor=" + *first.NextCursor)
	if !slices.Equal(deliveryIDs(second.Data), []string{d2, d1}) || second.HasMore {
		t.Fatalf("second page %+v", second)
	}

	// Account B sees only its own.
	if got := decode[pageJSON[adminDeliveryJSON]](t, s.bearer("GET", adminPath+"/deliveries", s.adminB, nil), 200); !slices.Equal(deliveryIDs(got.Data), []string{bDelivery}) {
		t.Fatalf("B sees %v", deliveryIDs(got.Data))
	}

	for query, field := range map[string]string{
		"?status=lost":        "status",
		"?mode=prod":          "mode",
		"?event_type=nope":    "event_type",
		"?endpoint_id=we_bad": "endpoint_id",
		"?limit=0":            "limit",
		"?limit=101":          "limit",
		"?cursor=evt_1":       "cursor",
	} {
		wantFieldError(t, s.bearer("GET", adminPath+"/deliveries"+query, s.adminA, nil), field)
	}
	// Every bad parameter is named in one answer.
	p := wantProblem(t, s.bearer("GET", adminPath+"/deliveries?status=x&mode=y&limit=0", s.adminA, nil), 422, bgcheck.CodeValidationFailed)
	if len(p.Errors) != 3 {
		t.Fatalf("errors %+v, want status, mode and limit", p.Errors)
	}
}

func TestAdminRedeliver(t *testing.T) {
	s := newAdminScene(t)
	liveEP := s.createEndpoint(s.a.LiveKey, "https://example.com/l")
	d := s.emit(s.a.ID, bgcheck.ModeLive, "check.completed", liveEP.ID)[0]
	path := adminPath + "/deliveries/" + d + "/redeliver"

	wantProblem(t, s.bearer("POST", path, s.adminA, nil), 409, bgcheck.CodeDeliveryInProgress)
	s.finish(d, bgcheck.DeliveryFailed)
	// Another account's admin cannot see it, let alone redeliver it.
	wantProblem(t, s.bearer("POST", path, s.adminB, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("POST", adminPath+"/deliveries/"+bgcheck.NewID(bgcheck.PrefixDelivery)+"/redeliver", s.adminA, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("POST", adminPath+"/deliveries/dlv_malformed/redeliver", s.adminA, nil), 404, bgcheck.CodeNotFound)
	if n, _ := s.db.CountUndispatched(context.Background()); n != 0 {
		t.Fatalf("%d deliveries wait for a workflow before the redelivery", n)
	}

	// A live delivery, redelivered by an admin whose session has no mode.
	re := decode[adminDeliveryJSON](t, s.bearer("POST", path, s.adminA, nil), http.StatusAccepted)
	if re.ID != d || re.Status != "pending" || re.Mode != "live" || re.AttemptCount != 1 || re.NextAttemptAt == nil {
		t.Fatalf("redeliver answered %+v", re)
	}
	if n, _ := s.db.CountUndispatched(context.Background()); n != 1 {
		t.Fatalf("%d deliveries wait for a workflow after redeliver, want 1", n)
	}
	var series int
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT series FROM deliveries WHERE id = $1`, d).Scan(&series); err != nil || series != 2 {
		t.Fatalf("series %d (%v), want a second series", series, err)
	}
	wantProblem(t, s.bearer("POST", path, s.adminA, nil), 409, bgcheck.CodeDeliveryInProgress)

	// The webhook route still keeps to the key's mode.
	wantProblem(t, s.do("POST", "/api/v1/webhooks/deliveries/"+d+"/redeliver", s.a.TestKey, nil), 404, bgcheck.CodeNotFound)
}
