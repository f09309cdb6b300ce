package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
)

// A database that does not answer (here: a table locked by another transaction) costs a request
// its deadline and a 503 with Retry-After, never a connection hung for as long as the lock lasts.
// The key lookup behind a cache miss is bounded too, though it is shared between requests.
func TestRequestsHaveADeadlineAgainstALockedDatabase(t *testing.T) {
	e := newEnv(t, api.Options{RequestTimeout: 300 * time.Millisecond})
	a := e.newAccount()
	ctx := context.Background()
	tx, err := e.db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE api_keys, webhook_endpoints IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/webhooks/endpoints"} {
		started := time.Now()
		r := e.do("GET", path, a.TestKey, nil) // a cache miss: the key's row is locked
		wantProblem(t, r, http.StatusServiceUnavailable, bgcheck.CodeUnavailable)
		if r.Header.Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
		if took := time.Since(started); took > 10*time.Second {
			t.Fatalf("answered after %s", took)
		}
	}
	_ = tx.Rollback(ctx)
	if r := e.do("GET", "/api/v1/webhooks/endpoints", a.TestKey, nil); r.Status != 200 {
		t.Fatalf("after the lock: %d %s", r.Status, r.Body)
	}
}
