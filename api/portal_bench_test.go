package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
)

// BenchmarkBearerAuth measures one request with a valid access token through every middleware and
// the router, the sign-in's state from the cache, up to a handler that answers 204.
func BenchmarkBearerAuth(b *testing.B) {
	s, _ := newInternalServer(b, slog.New(slog.DiscardHandler))
	s.sessions = auth.NewSessionChecker(s.db, 1<<62) // the cache never expires here
	u, err := s.db.CreateUser(context.Background(), postgres.NewUser{Email: "c@example.com", Role: bgcheck.RoleConsumer})
	if err != nil {
		b.Fatal(err)
	}
	sub := auth.Subject{UserID: u.ID, Role: u.Role, SessionID: bgcheck.NewID(prefixSession)}
	access, err := s.tokens.Issue(sub, auth.AccessToken)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.db.StartSession(context.Background(), sub.SessionID, u.ID, "jti", time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	r := chi.NewRouter()
	r.Use(s.observe, limitBody)
	r.With(s.requireBearer).Get("/api/v1/bench", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	req := httptest.NewRequest("GET", "/api/v1/bench", nil)
	req.Header.Set("Authorization", "Bearer "+access.Token)
	req.RemoteAddr = "127.0.0.1:40000"
	w := &discardWriter{h: http.Header{}}
	r.ServeHTTP(w, req)
	if w.status != http.StatusNoContent {
		b.Fatalf("status %d", w.status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		r.ServeHTTP(w, req)
	}
}

// BenchmarkLogin measures POST /api/v1/auth/login end to end in process (decoding, the user's row,
// argon2id at 19 MiB/t=2/p=1, the session rows, two signed tokens), reporting the median, and the
// median of a login with an unknown e-mail, which must cost about the same.
func BenchmarkLogin(b *testing.B) {
	s, _ := newInternalServer(b, slog.New(slog.DiscardHandler))
	hash, _ := auth.HashPassword("correct horse battery")
	if _, err := s.db.CreateUser(context.Background(), postgres.NewUser{Email: "c@example.com", Role: bgcheck.RoleConsumer, PasswordHash: hash}); err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	login := func(email string) (time.Duration, int) {
		body := `{"email":"` + email + `","password":"correct horse battery"}`
		req := httptest.NewRequest("POST", "/api/v1/auth/login", strings.NewReader(body))
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		return time.Since(start), rec.Code
	}
	var ok, unknown []time.Duration
	for b.Loop() {
		d, code := login("c@example.com")
		if code != 200 {
			b.Fatalf("login: %d", code)
		}
		ok = append(ok, d)
		d, code = login("nobody@example.com")
		if code != 401 {
			b.Fatalf("unknown e-mail: %d", code)
		}
		unknown = append(unknown, d)
	}
	b.ReportMetric(float64(median(ok).Microseconds())/1000, "ms-p50-login")
	b.ReportMetric(float64(median(unknown).Microseconds())/1000, "ms-p50-unknown-email")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
