package api_test

import (
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/api"
)

// A flood of sign-ins from many addresses, each under its own rate limit, must not take memory
// without bound: argon2id needs 19 MiB per computation, and only PasswordSlots run at once.
// The rest wait a moment and get 503 with Retry-After. The heap is sampled while the flood
// lasts; unbounded, 48 logins at once would need over 900 MiB.
func TestLoginFloodKeepsMemoryBounded(t *testing.T) {
	e, _ := newPortalEnv(t, api.Options{PasswordSlots: 2})
	a := e.newAccount()
	e.user(a.ID, "admin@acme.test", bgcheck.RoleAdmin, "correct horse battery")

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	const flood = 48
	statuses := make([]int, flood)
	var wg sync.WaitGroup
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.doWith("POST", "/api/v1/auth/login", map[string]any{"email": "admin@acme.test", "password": "wrong password"},
				map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i+1)})
			statuses[i] = r.Status
			if r.Status == http.StatusServiceUnavailable {
				wantProblem(t, r, http.StatusServiceUnavailable, bgcheck.CodeUnavailable)
				if r.Header.Get("Retry-After") == "" {
					t.Error("503 without Retry-After")
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled

	busy := 0
	for _, s := range statuses {
		switch s {
		case http.StatusServiceUnavailable:
			busy++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("status %d in the flood", s)
		}
	}
	grew := int64(peak.Load()) - int64(base.HeapAlloc)
	t.Logf("%d of %d turned away; heap grew by at most %d MiB", busy, flood, grew>>20)
	if busy == 0 {
		t.Error("no sign-in was turned away: the slots do not bound the work")
	}
	if grew > 200<<20 {
		t.Errorf("heap grew by %d MiB under the flood", grew>>20)
	}
	// Afterwards sign-in works as before.
	e.login("admin@acme.test", "correct horse battery")
}
