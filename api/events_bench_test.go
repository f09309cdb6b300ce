package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/auth"
)

// BenchmarkEventIngest measures POST /api/v1/events/test in process, 8 goroutines a core, with
// one endpoint subscribed to every type: the key from the cache, decoding, the envelope, and the
// transaction that writes the event and its delivery (committed to disk). ns/op is the time per
// event of the whole parallel run; its inverse is the events per second this process and the
// database take on this machine, without HTTP's own cost or a load generator's.
func BenchmarkEventIngest(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	s, key := newInternalServer(b, log)
	s.keys = auth.NewVerifier(s.db, 1<<62, log) // the cache never expires here
	h := s.Handler()
	post := func(path, body string) int {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "127.0.0.1:40000"
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, req)
		return w.status
	}
	if got := post("/api/v1/webhooks/endpoints", `{"url":"https://example.com/hooks"}`); got != http.StatusCreated {
		b.Fatalf("create endpoint: %d", got)
	}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if got := post("/api/v1/events/test", `{"type":"check.completed"}`); got != http.StatusCreated {
				b.Errorf("status %d", got)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
