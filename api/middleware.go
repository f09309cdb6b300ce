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
	"github.com/bgcheck/bgcheck/ratelimit"
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
// leaking anything, writes one access-log line per request, and counts the request in the
// metrics by route pattern (never the raw path, which would make a series per id).
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
					slog.String("path", r.URL.Path), slog.Int("status", rec.status),
					slog.Duration("duration", elapsed), slog.String("client", ri.client.String()))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// clientIP is the TCP peer, unless the peer is a trusted proxy: then it is the rightmost address
// of X-Forwarded-For, or of the RFC 7239 Forwarded header's for= parameters, that is not itself a
// trusted proxy, so a client cannot choose its own address by sending the header. A proxy appends
// to one of the two headers and passes the other through as the client sent it, and nothing tells
// which is which: when both name a client and disagree, neither is believed and the peer is the
// client.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	addr := peer.Addr().Unmap()
	if !s.trusted(addr) {
		return addr
	}
	xff, xffFound := s.forwardedClient(addr, r.Header.Values("X-Forwarded-For"), parseXFFHop)
	fwd, fwdFound := s.forwardedClient(addr, r.Header.Values("Forwarded"), parseForwardedHop)
	switch {
	case xffFound && fwdFound && xff != fwd:
		return addr
	case xffFound:
		return xff
	case fwdFound:
		return fwd
	case xff != addr:
		return xff // every hop was a trusted proxy: the leftmost is the closest to the client
	}
	return fwd
}

// forwardedClient walks the hops of a forwarding header from the right, starting at the trusted
// peer, and returns the first address that is not a trusted proxy (found true); or, when the hops
// run out or one cannot be read (nothing further left is trusted), the last trusted hop reached
// (found false).
func (s *Server) forwardedClient(peer netip.Addr, values []string, parseHop func(string) (netip.Addr, bool)) (netip.Addr, bool) {
	addr := peer
	for i := len(values) - 1; i >= 0; i-- {
		hops := splitList(values[i], ',')
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := parseHop(hops[j])
			if !ok {
				return addr, false
			}
			if !s.trusted(hop) {
				return hop, true
			}
			addr = hop
		}
	}
	return addr, false
}

// parseXFFHop reads one X-Forwarded-For element: an IP address.
func parseXFFHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a.Unmap(), err == nil
}

// parseForwardedHop reads the for= parameter of one Forwarded element (RFC 7239 §4, §6):
// `for=192.0.2.60;proto=https`, `for="192.0.2.60:8080"`, `for="[2001:db8::17]:4711"`. An element
// without for=, or with an obfuscated or "unknown" node, names no address.
func parseForwardedHop(element string) (netip.Addr, bool) {
	for _, pair := range splitList(element, ';') {
		name, value, ok := strings.Cut(pair, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "for") {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		if strings.HasPrefix(value, "[") { // [IPv6] or [IPv6]:port
			end := strings.IndexByte(value, ']')
			if end < 0 || (end+1 < len(value) && value[end+1] != ':') {
				return netip.Addr{}, false
			}
			a, err := netip.ParseAddr(value[1:end])
			return a.Unmap(), err == nil && a.Is6()
		}
		if host, _, found := strings.Cut(value, ":"); found { // IPv4:port; bare IPv6 is not allowed
			value = host
		}
		a, err := netip.ParseAddr(value)
		return a, err == nil && a.Is4()
	}
	return netip.Addr{}, false
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// splitList splits s at sep and trims spaces and tabs from the parts, dropping empty ones. It
// ignores quoting on purpose: no address contains a comma or a semicolon, and a client's stray
// quote must not swallow the hops a proxy appends after it.
func splitList(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if part := strings.Trim(s[start:i], " \t"); part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	return out
}

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

// requireAPIKey admits requests that carry a valid X-API-Key usable from the client's address,
// and puts the key in the request's context. Each request is counted against the platform rate
// limit: the key's budget once the key is verified, else the client address's, so guessing keys
// is throttled too. A spent budget is answered 429 before the authentication error, so a caller
// cannot learn whether a key is valid while refused.
func (s *Server) requireAPIKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoOf(r.Context())
		key, err := s.verifyAPIKey(r, ri.client)
		b := bucket{kind: byAddress, addr: ri.client}
		if err == nil {
			b = bucket{kind: byAPIKey, id: key.ID}
		}
		if !s.takeRate(w, r, ratelimit.Platform, b) {
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		ri.accountID, ri.apiKey = key.AccountID, key
		next.ServeHTTP(w, r)
	})
}

func (s *Server) verifyAPIKey(r *http.Request, client netip.Addr) (*bgcheck.APIKey, error) {
	raw := r.Header.Get("X-API-Key")
	if raw == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeMissingAPIKey, "send your API key in the X-API-Key header")
	}
	return s.keys.Verify(r.Context(), raw, client)
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
// that is still active, and puts its claims in the request's context. Each request is counted
// against the consumer rate limit: the user's budget once the token is verified, else the client
// address's; a spent budget is answered 429 before the authentication error.
func (s *Server) requireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoOf(r.Context())
		claims, err := s.verifyBearer(r)
		b := bucket{kind: byAddress, addr: ri.client}
		if err == nil {
			b = bucket{kind: byUser, id: claims.Subject}
		}
		if !s.takeRate(w, r, ratelimit.Consumer, b) {
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		ri.user, ri.accountID = claims, claims.Account
		next.ServeHTTP(w, r)
	})
}

func (s *Server) verifyBearer(r *http.Request) (*auth.Claims, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeMissingToken, "send your access token as Authorization: Bearer <token>")
	}
	scheme, raw, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return nil, bgcheck.Errorf(bgcheck.CodeInvalidToken, "the Authorization header must be Bearer <token>")
	}
	claims, err := s.tokens.Parse(raw, auth.AccessToken)
	if err != nil {
		return nil, err
	}
	active, err := s.sessions.Active(r.Context(), claims.Session)
	if err != nil {
		return nil, err
	}
	if !active {
		return nil, bgcheck.Errorf(bgcheck.CodeInvalidToken, "this sign-in has ended; sign in again")
	}
	return claims, nil
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
