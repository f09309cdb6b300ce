package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

const endpoints = "/api/v1/webhooks/endpoints"

func TestEndpointCreate(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()

	r := e.do("POST", endpoints, a.TestKey, map[string]any{
		"url": "https://hooks.example.com/bgcheck", "events": []string{"check.completed", "report.ready", "check.completed"},
		"description": "production receiver", "enabled": false,
	})
	ep := decode[endpointJSON](t, r, http.StatusCreated)
	if !bgcheck.ValidID("we", ep.ID) || r.Header.Get("Location") != endpoints+"/"+ep.ID {
		t.Fatalf("id %q / Location %q", ep.ID, r.Header.Get("Location"))
	}
	if ep.URL != "https://hooks.example.com/bgcheck" || ep.Mode != "test" || ep.Enabled || ep.Description != "production receiver" {
		t.Fatalf("record %+v does not reflect the request", ep)
	}
	if fmt.Sprint(ep.Events) != "[check.completed report.ready]" {
		t.Fatalf("events %v: want the list without duplicates", ep.Events)
	}
	raw, ok := strings.CutPrefix(ep.Secret, "whsec_")
	if b, err := base64.StdEncoding.DecodeString(raw); !ok || err != nil || len(b) < 32 {
		t.Fatalf("secret %q is not whsec_ and 256 random bits", ep.Secret)
	}
	if ep.CreatedAt.IsZero() || ep.CreatedAt.Location().String() != "UTC" {
		t.Fatalf("created_at %v", ep.CreatedAt)
	}

	// Defaults: every event, enabled.
	def := e.createEndpoint(a.TestKey, "http://hooks.example.com/all")
	if fmt.Sprint(def.Events) != "[*]" || !def.Enabled {
		t.Fatalf("defaults: events %v enabled %v", def.Events, def.Enabled)
	}
	// The secret is shown only at creation.
	got := e.do("GET", endpoints+"/"+ep.ID, a.TestKey, nil)
	if strings.Contains(string(got.Body), "whsec_") || strings.Contains(string(e.do("GET", endpoints, a.TestKey, nil).Body), "whsec_") {
		t.Fatal("a secret is shown by get or list")
	}
}

func TestEndpointCreateValidation(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	long := "https://example.com/" + strings.Repeat("a", 2049-len("https://example.com/"))
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"missing url", map[string]any{"events": []string{"*"}}, "url"},
		{"empty url", map[string]any{"url": ""}, "url"},
		{"relative url", map[string]any{"url": "/hooks"}, "url"},
		{"ftp url", map[string]any{"url": "ftp://example.com/x"}, "url"},
		{"no host", map[string]any{"url": "https:///path"}, "url"},
		{"url over 2048", map[string]any{"url": long}, "url"},
		{"url not a string", map[string]any{"url": 5}, "url"},
		{"loopback v4", map[string]any{"url": "http://127.0.0.1:8080/x"}, "url"},
		{"loopback v6", map[string]any{"url": "http://[::1]/x"}, "url"},
		{"mapped loopback v6", map[string]any{"url": "http://[::ffff:127.0.0.1]/x"}, "url"},
		{"decimal-encoded loopback", map[string]any{"url": "http://2130706433/x"}, "url"},
		{"hex-encoded loopback", map[string]any{"url": "http://0x7f.0.0.1/x"}, "url"},
		{"private 10/8", map[string]any{"url": "https://10.1.2.3/x"}, "url"},
		{"private 192.168/16", map[string]any{"url": "https://192.168.0.10/x"}, "url"},
		{"link-local metadata", map[string]any{"url": "http://169.254.169.254/latest"}, "url"},
		{"link-local v6", map[string]any{"url": "http://[fe80::1]/x"}, "url"},
		{"localhost name", map[string]any{"url": "http://localhost:3000/x"}, "url"},
		{"zoned loopback v6", map[string]any{"url": "http://[::1%25lo]:8080/x"}, "url"},
		{"zoned link-local v6", map[string]any{"url": "http://[fe80::1%25eth0]/x"}, "url"},
		{"zoned unique-local v6", map[string]any{"url": "http://[fd00:ec2::254%25x]/latest"}, "url"},
		{"zoned public v6", map[string]any{"url": "http://[2606:4700::1111%25eth0]/x"}, "url"},
		{"unescaped zone", map[string]any{"url": "http://[fe80::1%eth0]/x"}, "url"},
		{"unknown event type", map[string]any{"url": "https://example.com", "events": []string{"check.exploded"}}, "events"},
		{"empty events", map[string]any{"url": "https://example.com", "events": []string{}}, "events"},
		{"star with others", map[string]any{"url": "https://example.com", "events": []string{"*", "check.created"}}, "events"},
		{"events not an array", map[string]any{"url": "https://example.com", "events": "check.created"}, "events"},
		{"description too long", map[string]any{"url": "https://example.com", "description": strings.Repeat("d", 501)}, "description"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantFieldError(t, e.do("POST", endpoints, a.TestKey, c.body), c.field)
		})
	}
	// A request with several problems names all of them.
	p := wantProblem(t, e.do("POST", endpoints, a.TestKey, map[string]any{"url": "nope", "events": []string{"x"}}), 422, bgcheck.CodeValidationFailed)
	if len(p.Errors) != 2 {
		t.Fatalf("errors %+v, want url and events", p.Errors)
	}

	malformed := map[string]string{
		"not json":      `{"url":`,
		"garbage":       `hello`,
		"unknown field": `{"url":"https://example.com","secret":"mine"}`,
		"empty body":    ``,
		"array":         `[{"url":"https://example.com"}]`,
		"null":          `null`,
		"a string":      `"https://example.com"`,
		"two objects":   `{"url":"https://example.com"}{"url":"https://example.org"}`,
	}
	for name, body := range malformed {
		t.Run(name, func(t *testing.T) {
			wantProblem(t, e.do("POST", endpoints, a.TestKey, body), 400, bgcheck.CodeMalformedJSON)
		})
	}
	big := `{"url":"https://example.com","description":"` + strings.Repeat("x", 1<<20) + `"}`
	wantProblem(t, e.do("POST", endpoints, a.TestKey, big), 413, bgcheck.CodeBodyTooLarge)

	// None of the refused requests created anything.
	if page := decode[pageJSON[endpointJSON]](t, e.do("GET", endpoints, a.TestKey, nil), 200); len(page.Data) != 0 {
		t.Fatalf("refused requests created %d endpoints", len(page.Data))
	}
}

func TestPrivateURLsAllowedWhenTheOperatorSaysSo(t *testing.T) {
	e := newEnv(t, api.Options{AllowPrivateWebhookURLs: true})
	a := e.newAccount()
	for _, u := range []string{"http://127.0.0.1:9999/hook", "http://[::1]/x", "http://localhost/x", "http://2130706433/"} {
		e.createEndpoint(a.TestKey, u)
	}
	// The other checks still apply.
	wantFieldError(t, e.do("POST", endpoints, a.TestKey, map[string]any{"url": "ftp://127.0.0.1/"}), "url")
}

func TestEndpointGetUpdateDeleteRotate(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	ep := e.createEndpoint(a.TestKey, "https://example.com/one")
	path := endpoints + "/" + ep.ID

	got := decode[endpointJSON](t, e.do("GET", path, a.TestKey, nil), 200)
	if got.ID != ep.ID || got.URL != ep.URL || got.Secret != "" {
		t.Fatalf("get: %+v", got)
	}

	upd := decode[endpointJSON](t, e.do("PATCH", path, a.TestKey, map[string]any{
		"events": []string{"dispute.filed"}, "url": "https://example.com/two", "description": "d", "enabled": false,
	}), 200)
	if upd.URL != "https://example.com/two" || fmt.Sprint(upd.Events) != "[dispute.filed]" || upd.Description != "d" || upd.Enabled {
		t.Fatalf("patch: %+v", upd)
	}
	if !upd.UpdatedAt.After(ep.UpdatedAt) {
		t.Fatalf("updated_at did not move: %v → %v", ep.UpdatedAt, upd.UpdatedAt)
	}
	// A partial patch leaves the other fields alone.
	upd2 := decode[endpointJSON](t, e.do("PATCH", path, a.TestKey, map[string]any{"enabled": true}), 200)
	if upd2.URL != upd.URL || fmt.Sprint(upd2.Events) != "[dispute.filed]" || !upd2.Enabled {
		t.Fatalf("partial patch: %+v", upd2)
	}
	// Invalid patches change nothing.
	wantFieldError(t, e.do("PATCH", path, a.TestKey, map[string]any{"events": []string{}, "enabled": false}), "events")
	wantFieldError(t, e.do("PATCH", path, a.TestKey, map[string]any{"url": "http://10.0.0.1/"}), "url")
	wantFieldError(t, e.do("PATCH", path, a.TestKey, map[string]any{"url": "http://[::1%25lo]:8080/"}), "url")
	wantProblem(t, e.do("PATCH", path, a.TestKey, `{"colour":"red"}`), 400, bgcheck.CodeMalformedJSON)
	if now := decode[endpointJSON](t, e.do("GET", path, a.TestKey, nil), 200); !now.Enabled || now.URL != upd.URL {
		t.Fatalf("a refused patch changed the endpoint: %+v", now)
	}

	before := storedSecret(t, e.db, ep.ID)
	wantFieldError(t, e.do("POST", path+"/rotate-secret", a.TestKey, map[string]any{"expire_previous_in": -1}), "expire_previous_in")
	wantFieldError(t, e.do("POST", path+"/rotate-secret", a.TestKey, map[string]any{"expire_previous_in": 8 * 86400}), "expire_previous_in")
	if storedSecret(t, e.db, ep.ID) != before {
		t.Fatal("a refused rotation changed the secret")
	}
	rot := decode[map[string]any](t, e.do("POST", path+"/rotate-secret", a.TestKey, nil), 200)
	secret, _ := rot["secret"].(string)
	if rot["id"] != ep.ID || !strings.HasPrefix(secret, "whsec_") || secret == ep.Secret {
		t.Fatalf("rotate: %v", rot)
	}
	expires, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rot["previous_secret_expires_at"]))
	if err != nil || time.Until(expires) < 23*time.Hour || time.Until(expires) > 25*time.Hour {
		t.Fatalf("by default the old secret signs 24 h more: %v (%v)", rot["previous_secret_expires_at"], err)
	}
	if got := decode[map[string]any](t, e.do("GET", path, a.TestKey, nil), 200); got["previous_secret_expires_at"] == nil {
		t.Fatalf("the endpoint does not show the overlap: %v", got)
	}
	if after := storedSecret(t, e.db, ep.ID); after != secret || after == before {
		t.Fatal("the stored secret is not the rotated one")
	}
	// expire_previous_in 0: the old secret stops at once.
	rot = decode[map[string]any](t, e.do("POST", path+"/rotate-secret", a.TestKey, map[string]any{"expire_previous_in": 0}), 200)
	if rot["previous_secret_expires_at"] != nil {
		t.Fatalf("rotate with no overlap: %v", rot)
	}

	if r := e.do("DELETE", path, a.TestKey, nil); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, r := range []*response{
		e.do("GET", path, a.TestKey, nil),
		e.do("PATCH", path, a.TestKey, map[string]any{"enabled": true}),
		e.do("POST", path+"/rotate-secret", a.TestKey, nil),
		e.do("DELETE", path, a.TestKey, nil),
	} {
		wantProblem(t, r, 404, bgcheck.CodeNotFound)
	}
	if page := decode[pageJSON[endpointJSON]](t, e.do("GET", endpoints, a.TestKey, nil), 200); len(page.Data) != 0 {
		t.Fatal("a deleted endpoint is listed")
	}

	// Ids that cannot exist are 404 too, without a database error.
	for _, id := range []string{"we_nope", "cand_01a1fcafdb3d725c82bf110901866277", "we_01A1FCAFDB3D725C82BF110901866277", "we_" + strings.Repeat("0", 32)} {
		wantProblem(t, e.do("GET", endpoints+"/"+id, a.TestKey, nil), 404, bgcheck.CodeNotFound)
	}
}

// storedSecret reads an endpoint's signing secret from its row, unsealing it with the test key.
func storedSecret(t *testing.T, db *postgres.DB, id string) string {
	var keyID string
	var sealed []byte
	if err := db.Pool().QueryRow(context.Background(), `SELECT secret_key_id, secret_sealed FROM webhook_endpoints WHERE id = $1`, id).
		Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	s, err := pgtest.SecretBox(t).Open(keyID, sealed, []byte(id))
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// Test keys never see live endpoints and the other way round; another account's endpoint is 404
// to every route, and its record is unchanged afterwards.
func TestEndpointModeAndAccountIsolation(t *testing.T) {
	e := newEnv(t, api.Options{})
	a, b := e.newAccount(), e.newAccount()
	testEP := e.createEndpoint(a.TestKey, "https://example.com/test")
	liveEP := e.createEndpoint(a.LiveKey, "https://example.com/live")
	if liveEP.Mode != "live" || testEP.Mode != "test" {
		t.Fatalf("modes: %s %s", testEP.Mode, liveEP.Mode)
	}
	onlyID := func(key string) string {
		page := decode[pageJSON[endpointJSON]](t, e.do("GET", endpoints, key, nil), 200)
		ids := []string{}
		for _, x := range page.Data {
			ids = append(ids, x.ID)
		}
		return strings.Join(ids, ",")
	}
	if got := onlyID(a.TestKey); got != testEP.ID {
		t.Fatalf("test key lists %s", got)
	}
	if got := onlyID(a.LiveKey); got != liveEP.ID {
		t.Fatalf("live key lists %s", got)
	}
	if got := onlyID(b.TestKey); got != "" {
		t.Fatalf("another account lists %s", got)
	}

	for name, c := range map[string]struct{ key, id string }{
		"live key, test endpoint":  {a.LiveKey, testEP.ID},
		"test key, live endpoint":  {a.TestKey, liveEP.ID},
		"other account, same mode": {b.TestKey, testEP.ID},
		"other account, live":      {b.LiveKey, liveEP.ID},
	} {
		t.Run(name, func(t *testing.T) {
			path := endpoints + "/" + c.id
			wantProblem(t, e.do("GET", path, c.key, nil), 404, bgcheck.CodeNotFound)
			wantProblem(t, e.do("PATCH", path, c.key, map[string]any{"url": "https://evil.example.com"}), 404, bgcheck.CodeNotFound)
			wantProblem(t, e.do("POST", path+"/rotate-secret", c.key, nil), 404, bgcheck.CodeNotFound)
			wantProblem(t, e.do("DELETE", path, c.key, nil), 404, bgcheck.CodeNotFound)
		})
	}
	for _, ep := range []endpointJSON{testEP, liveEP} {
		if storedSecret(t, e.db, ep.ID) != ep.Secret {
			t.Fatal("another tenant rotated a secret")
		}
	}
	if got := decode[endpointJSON](t, e.do("GET", endpoints+"/"+testEP.ID, a.TestKey, nil), 200); got.URL != testEP.URL {
		t.Fatal("another tenant changed an endpoint")
	}
}

func TestEndpointLimitPerAccountAndMode(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	for i := range postgres.MaxEndpointsPerMode {
		e.createEndpoint(a.TestKey, fmt.Sprintf("https://example.com/%d", i))
	}
	p := wantProblem(t, e.do("POST", endpoints, a.TestKey, map[string]any{"url": "https://example.com/51"}), 422, bgcheck.CodeValidationFailed)
	if !strings.Contains(p.Errors[0].Message, "50") {
		t.Fatalf("the limit is not named: %+v", p.Errors)
	}
	// The other mode has its own allowance, and deleting one frees a place.
	e.createEndpoint(a.LiveKey, "https://example.com/live")
	page := decode[pageJSON[endpointJSON]](t, e.do("GET", endpoints+"?limit=1", a.TestKey, nil), 200)
	if r := e.do("DELETE", endpoints+"/"+page.Data[0].ID, a.TestKey, nil); r.Status != 204 {
		t.Fatal(r.Status)
	}
	e.createEndpoint(a.TestKey, "https://example.com/again")
}

func TestEndpointListPagination(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	var created []string
	for i := range 5 {
		created = append(created, e.createEndpoint(a.TestKey, fmt.Sprintf("https://example.com/%d", i)).ID)
	}
	var seen []string
	path := endpoints + "?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("pagination does not end")
		}
		page := decode[pageJSON[endpointJSON]](t, e.do("GET", path, a.TestKey, nil), 200)
		for _, ep := range page.Data {
			seen = append(seen, ep.ID)
		}
		if !page.HasMore {
			if page.NextCursor != nil {
				t.Fatal("next_cursor on the last page")
			}
			break
		}
		if len(page.Data) != 2 || page.NextCursor == nil {
			t.Fatalf("page %+v", page)
		}
		path = endpoints + "?limit=2&cursor=" + *page.NextCursor
	}
	// Newest first, each exactly once.
	want := []string{created[4], created[3], created[2], created[1], created[0]}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v", seen, want)
	}
	def := decode[pageJSON[endpointJSON]](t, e.do("GET", endpoints, a.TestKey, nil), 200)
	if len(def.Data) != 5 || def.HasMore {
		t.Fatalf("default page: %d items, has_more %v", len(def.Data), def.HasMore)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "limit=-1"} {
		wantFieldError(t, e.do("GET", endpoints+"?"+q, a.TestKey, nil), "limit")
	}
	wantFieldError(t, e.do("GET", endpoints+"?cursor=garbage", a.TestKey, nil), "cursor")
	wantFieldError(t, e.do("GET", endpoints+"?cursor=cand_01a1fcafdb3d725c82bf110901866277", a.TestKey, nil), "cursor")
}

// The catalogue lists the nine types in the spec's order, each with a schema.
func TestEventTypes(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	got := decode[pageJSON[struct {
		Type        string         `json:"type"`
		Description string         `json:"description"`
		Schema      map[string]any `json:"schema"`
	}]](t, e.do("GET", "/api/v1/event-types", a.TestKey, nil), 200)
	if len(got.Data) != len(bgcheck.EventTypes) {
		t.Fatalf("%d types", len(got.Data))
	}
	for i, et := range got.Data {
		if et.Type != bgcheck.EventTypes[i] || et.Description == "" || et.Schema["type"] != "object" {
			t.Errorf("type %d: %+v", i, et)
		}
	}
}
