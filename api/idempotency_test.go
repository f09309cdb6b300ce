package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
)

// Twenty concurrent identical POSTs with one Idempotency-Key create one candidate, and all get
// its answer; the same key with another body is refused; another mode's key space is its own.
func TestIdempotencyKeyUnderConcurrentRepeats(t *testing.T) {
	e := newEnv(t, api.Options{})
	a := e.newAccount()
	body, _ := json.Marshal(map[string]any{"first_name": "Jane", "last_name": "Doe", "email": "jane@example.com"})
	type answer struct {
		status   int
		id       string
		replayed bool
	}
	answers := make([]answer, 20)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/candidates", bytes.NewReader(body))
			req.Header.Set("X-API-Key", a.TestKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "create-jane-1")
			res, err := e.srv.Client().Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			var c struct{ ID string }
			_ = json.NewDecoder(res.Body).Decode(&c)
			answers[i] = answer{res.StatusCode, c.ID, res.Header.Get("Idempotent-Replayed") == "true"}
		})
	}
	wg.Wait()
	replays := 0
	for i, an := range answers {
		if an.status != http.StatusCreated || an.id != answers[0].id || an.id == "" {
			t.Fatalf("answer %d: %+v, want 201 with %s", i, an, answers[0].id)
		}
		if an.replayed {
			replays++
		}
	}
	var n int
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM candidates WHERE account_id = $1`, a.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d candidates, %v; want 1", n, err)
	}
	if replays != 19 {
		t.Fatalf("%d answers were replays, want 19", replays)
	}

	other, _ := json.Marshal(map[string]any{"first_name": "Olga", "last_name": "Other"})
	r := e.doWith("POST", "/api/v1/candidates", other, map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": "create-jane-1"})
	wantProblem(t, r, 422, bgcheck.CodeIdempotencyKeyReused)
	// The same key in live mode is another key.
	r = e.doWith("POST", "/api/v1/candidates", body, map[string]string{"X-API-Key": a.LiveKey, "Idempotency-Key": "create-jane-1"})
	if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("live mode, same key: %d %s", r.Status, r.Body)
	}
	// A refused request keeps nothing (Stripe keeps no refused request): its retry runs again.
	bad := []byte(`{"first_name":""}`)
	first := e.doWith("POST", "/api/v1/candidates", bad, map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": "bad-1"})
	again := e.doWith("POST", "/api/v1/candidates", bad, map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": "bad-1"})
	if first.Status != 422 || again.Status != 422 || again.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a refused request repeated: %d then %d (replayed %q)", first.Status, again.Status, again.Header.Get("Idempotent-Replayed"))
	}
	// Another API key of the account never gets this key's answer (it may lack the scope).
	other2, _ := e.newKey(a.ID, keyOpts{})
	wantProblem(t, e.doWith("POST", "/api/v1/candidates", body, map[string]string{"X-API-Key": other2, "Idempotency-Key": "create-jane-1"}),
		422, bgcheck.CodeIdempotencyKeyReused)
	// The answer is kept sealed: an endpoint's creation answers its signing secret.
	ep := e.doWith("POST", "/api/v1/webhooks/endpoints", map[string]any{"url": "https://example.com/h"},
		map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": "ep-1"})
	var created struct{ Secret string }
	_ = json.Unmarshal(ep.Body, &created)
	var stored []byte
	if err := e.db.Pool().QueryRow(context.Background(), `SELECT response_body FROM idempotency_keys WHERE key = 'ep-1'`).Scan(&stored); err != nil ||
		created.Secret == "" || bytes.Contains(stored, []byte(created.Secret)) {
		t.Fatalf("the kept answer holds the secret in the clear (%v)", err)
	}
	replay := e.doWith("POST", "/api/v1/webhooks/endpoints", map[string]any{"url": "https://example.com/h"},
		map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": "ep-1"})
	if replay.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.Body, ep.Body) {
		t.Fatalf("the sealed answer does not replay: %s", replay.Body)
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'k'
	}
	wantFieldError(t, e.doWith("POST", "/api/v1/candidates", body, map[string]string{"X-API-Key": a.TestKey, "Idempotency-Key": string(long)}), "Idempotency-Key")
}
