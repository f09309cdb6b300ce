package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
)

// statusRecorder remembers the status written, for the access log and the panic handler.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe is the outermost middleware: it assigns the request id (echoed in X-Request-Id and in
// every problem body), works out the client address, gives the request its deadline (so no
// database call on its path outlives it: a slow or locked database costs the caller a 503, not a
// hung connection), turns panics into 500 internal without leaking anything, writes one
// access-log line per request, and counts the request in the metrics by route pattern (never the
// raw path, which would make a series per id).
func (s *Server) observe(next http.Handler) http.Handler {
	timeout := cmp.Or(s.opts.RequestTimeout, DefaultRequestTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{id: newRequestID(), client: s.clientIP(r), log: s.log}
		ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), requestInfoKey, ri), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		w.Header().Set("X-Request-Id", ri.id)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				requestLogger(r).Error("panic", "panic", v, "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, bgcheck.Errorf(bgcheck.CodeInternal, "an unexpected error occurred; quote the request id when reporting it"))
				}
			}
			logged := s.log.Enabled(r.Context(), slog.LevelInfo)
			if !logged && s.metrics == nil {
				return
			}
			elapsed, pattern := time.Since(start), ""
			if route := chi.RouteContext(r.Context()); route != nil {
				pattern = route.RoutePattern()
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			s.metrics.Request(pattern, r.Method, status, elapsed)
			if logged {
				s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", ri.id), slog.String("account_id", ri.accountID),
					slog.String("method", r.Method), slog.String("route", pattern),
					slog.String("path", loggablePath(r.URL.Path)), slog.Int("status", rec.status),
					slog.Duration("duration", elapsed), slog.String("client", ri.client.String()))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// loggablePath is the path the access log writes: the path, unless it holds what looks like a
// card number, which is never logged (the billing routes refuse such requests; the log of the
// refusal must not keep the number either).
func loggablePath(path string) string {
	if containsCardNumber([]byte(path)) {
		return "(a path holding a card number, not logged)"
	}
	return path
}
