package api

import (
	"net/http"
)

// limitBody caps request bodies at maxBodyBytes; decodeJSON answers 413 body_too_large, at once
// when Content-Length says so and while reading otherwise. The refusal is the handler's, not this
// middleware's, so that it comes after authentication and rate limiting and carries the
// X-RateLimit-* headers like every other answer of a limited route.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}
