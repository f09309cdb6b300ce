package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
)

type ctxKey int

const requestInfoKey ctxKey = 0

// requestInfo travels with each request: set up first, filled in by later middleware (the
// account, once a credential is verified), read by the access log when the request is done.
type requestInfo struct {
	id        string
	client    netip.Addr
	accountID string
	apiKey    *bgcheck.APIKey // set by requireAPIKey
	user      *auth.Claims    // set by requireBearer
	log       *slog.Logger
}

func infoOf(ctx context.Context) *requestInfo {
	if ri, ok := ctx.Value(requestInfoKey).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{log: slog.Default()}
}

func requestID(ctx context.Context) string      { return infoOf(ctx).id }
func clientAddr(ctx context.Context) netip.Addr { return infoOf(ctx).client }

// requestLogger returns the logger for r, carrying its request id (and account, once known).
func requestLogger(r *http.Request) *slog.Logger {
	ri := infoOf(r.Context())
	l := ri.log.With("request_id", ri.id)
	if ri.accountID != "" {
		l = l.With("account_id", ri.accountID)
	}
	return l
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var out [len(bgcheck.PrefixRequest) + 1 + 24]byte
	n := copy(out[:], bgcheck.PrefixRequest+"_")
	hex.Encode(out[n:], b[:])
	return string(out[:])
}

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
// every problem body), works out the client address, turns panics into 500 internal without
// leaking anything, and writes one access-log line per request.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{id: newRequestID(), client: s.clientIP(r), log: s.log}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey, ri))
		w.Header()["X-Request-Id"] = []string{ri.id}
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
			if s.log.Enabled(r.Context(), slog.LevelInfo) {
				route := chi.RouteContext(r.Context())
				pattern := ""
				if route != nil {
					pattern = route.RoutePattern()
				}
				s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", ri.id), slog.String("account_id", ri.accountID),
					slog.String("method", r.Method), slog.String("route", pattern),
					slog.String("path", r.URL.Path), slog.Int("status", rec.status),
					slog.Duration("duration", time.Since(start)), slog.String("client", ri.client.String()))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// clientIP is the TCP peer, unless the peer is a trusted proxy: then it is the rightmost
// X-Forwarded-For address that is not itself a trusted proxy, so a client cannot choose its own
// address by sending the header.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if !s.trusted(addr) {
		return addr
	}
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := splitComma(values[i])
		for j := len(hops) - 1; j >= 0; j-- {
			hop, err := netip.ParseAddr(hops[j])
			if err != nil {
				return addr // a malformed hop: trust nothing further left
			}
			hop = hop.Unmap()
			if !s.trusted(hop) {
				return hop
			}
			addr = hop
		}
	}
	return addr
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			part := s[start:i]
			for len(part) > 0 && (part[0] == ' ' || part[0] == '\t') {
				part = part[1:]
			}
			for len(part) > 0 && (part[len(part)-1] == ' ' || part[len(part)-1] == '\t') {
				part = part[:len(part)-1]
			}
			if part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	return out
}

// limitBody refuses bodies over maxBodyBytes: at once when Content-Length says so, and while
// reading otherwise.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBodyBytes {
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeBodyTooLarge, "the request body is larger than %d bytes", maxBodyBytes))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// requireAPIKey admits requests that carry a valid X-API-Key usable from the client's address,
// and puts the key in the request's context.
func (s *Server) requireAPIKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.Header.Get("X-API-Key")
		if raw == "" {
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeMissingAPIKey, "send your API key in the X-API-Key header"))
			return
		}
		ri := infoOf(r.Context())
		key, err := s.keys.Verify(r.Context(), raw, ri.client)
		if err != nil {
			writeError(w, r, err)
			return
		}
		ri.accountID, ri.apiKey = key.AccountID, key
		next.ServeHTTP(w, r)
	})
}

// apiKeyOf returns the verified key of a request that passed requireAPIKey.
func apiKeyOf(r *http.Request) *bgcheck.APIKey {
	return infoOf(r.Context()).apiKey
}

// tenantOf is the account and mode a key-authenticated request acts in.
func tenantOf(r *http.Request) bgcheck.Tenant {
	k := apiKeyOf(r)
	return bgcheck.Tenant{AccountID: k.AccountID, Mode: k.Mode}
}

// requireScope admits keys that hold scope (or have no scopes, meaning full access).
func requireScope(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !apiKeyOf(r).HasScope(scope) {
				writeError(w, r, bgcheck.Errorf(bgcheck.CodeInsufficientScope, "this key lacks the scope %s", scope))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// requireBearer admits requests with a valid access token (Authorization: Bearer …) of a sign-in
// that is still active, and puts its claims in the request's context.
func (s *Server) requireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeMissingToken, "send your access token as Authorization: Bearer <token>"))
			return
		}
		scheme, raw, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || raw == "" {
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeInvalidToken, "the Authorization header must be Bearer <token>"))
			return
		}
		claims, err := s.tokens.Parse(raw, auth.AccessToken)
		if err != nil {
			writeError(w, r, err)
			return
		}
		active, err := s.sessions.Active(r.Context(), claims.Session)
		if err != nil {
			writeError(w, r, err)
			return
		}
		if !active {
			writeError(w, r, bgcheck.Errorf(bgcheck.CodeInvalidToken, "this sign-in has ended; sign in again"))
			return
		}
		ri := infoOf(r.Context())
		ri.user, ri.accountID = claims, claims.Account
		next.ServeHTTP(w, r)
	})
}

// userOf returns the claims of a request that passed requireBearer.
func userOf(r *http.Request) *auth.Claims { return infoOf(r.Context()).user }

// requireRole admits only portal users of the role.
func requireRole(role bgcheck.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if userOf(r).Role != role {
				writeError(w, r, bgcheck.Errorf(bgcheck.CodeForbidden, "this route is for %s users", role))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
