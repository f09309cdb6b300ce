package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

// Idempotency of the API-key routes' POSTs, with Stripe's semantics.
const (
	idempotencyHeader   = "Idempotency-Key"
	replayedHeader      = "Idempotent-Replayed"
	maxIdempotencyKey   = 255
	idempotencyLease    = 30 * time.Second // longer than any request may run (the 20 s deadline)
	idempotencyPollStep = 25 * time.Millisecond
)

// keptHeaders are the answer's headers a replay repeats.
var keptHeaders = []string{"Content-Type", "Location"}

// idempotent makes a POST that carries an Idempotency-Key safe to retry: the first request with a
// key runs and, if it succeeds (2xx), its answer is kept 24 hours; a repeat with the same API
// key, method, path and body gets that answer (with Idempotent-Replayed: true) without running
// again; a repeat with another request is 422 idempotency_key_reused; a repeat while the first
// still runs waits for its answer. Keys belong to the account and mode. A request that did not
// succeed keeps nothing, as Stripe keeps no refused request: its retry runs again.
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(idempotencyHeader)
		if r.Method != http.MethodPost || key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > maxIdempotencyKey {
			writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: idempotencyHeader, Message: "must be at most 255 characters"}))
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, r, decodeError(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.New()
		// The API key is part of the request: another key (with other scopes, say) never gets
		// this one's answer.
		sum.Write([]byte(apiKeyOf(r).ID + " " + r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + "\n"))
		sum.Write(body)
		fingerprint := sum.Sum(nil)
		t := tenantOf(r)
		for {
			claim, err := s.db.ClaimIdempotencyKey(r.Context(), t, key, fingerprint, idempotencyLease)
			if err != nil {
				writeError(w, r, err)
				return
			}
			switch {
			case claim.Owned:
				s.runOwned(w, r, next, t, key, claim.Token)
				return
			case claim.Response != nil:
				for k, v := range claim.Response.Headers {
					w.Header().Set(k, v)
				}
				w.Header().Set(replayedHeader, "true")
				w.WriteHeader(claim.Response.StatusCode)
				_, _ = w.Write(claim.Response.Body)
				return
			}
			// The first request with the key still runs: wait for its answer.
			select {
			case <-r.Context().Done():
				writeError(w, r, bgcheck.Errorf(bgcheck.CodeIdempotencyKeyInUse,
					"a request with this Idempotency-Key is still running; retry once it has answered"))
				return
			case <-time.After(idempotencyPollStep):
			}
		}
	})
}

// runOwned runs the first request with a key and keeps its answer.
func (s *Server) runOwned(w http.ResponseWriter, r *http.Request, next http.Handler, t bgcheck.Tenant, key, token string) {
	rec := &recordingWriter{ResponseWriter: w, status: http.StatusOK}
	completed := false
	defer func() {
		// Kept even if the client went away (the work was done); released on a panic or an
		// answer that is not a success.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		if !completed || rec.status < 200 || rec.status > 299 {
			_ = s.db.ReleaseIdempotencyKey(ctx, t, key, token)
			return
		}
		headers := map[string]string{}
		for _, h := range keptHeaders {
			if v := rec.Header().Get(h); v != "" {
				headers[h] = v
			}
		}
		if err := s.db.FinishIdempotencyKey(ctx, t, key, token, postgres.StoredResponse{StatusCode: rec.status, Headers: headers, Body: rec.body.Bytes()}); err != nil {
			requestLogger(r).Error("could not keep an idempotent answer; a retry with the key will run again", "err", err)
		}
	}()
	next.ServeHTTP(rec, r)
	completed = true
}

// recordingWriter passes an answer on and keeps a copy of it.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
