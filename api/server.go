// Package api is bgcheck's HTTP interface: a chi router under /api/v1 with API-key
// authentication, problem+json errors (API.md §1) and the routes of API.md §4 and the candidates
// family.
package api

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
)

// Options are the settings of the HTTP layer.
type Options struct {
	// AllowPrivateWebhookURLs lets endpoints point at loopback, private and link-local
	// addresses: for local development and tests only.
	AllowPrivateWebhookURLs bool
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
}

// Server holds the HTTP layer's dependencies.
type Server struct {
	db   *postgres.DB
	keys *auth.Verifier
	opts Options
	log  *slog.Logger

	// extraKeyRoutes, when set (by benchmarks), adds routes behind the API-key middleware.
	extraKeyRoutes func(chi.Router)
}

// New returns a Server; call Handler for its routes.
func New(db *postgres.DB, keys *auth.Verifier, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{db: db, keys: keys, opts: opts, log: log}
}

// Handler returns the router of every route the service serves.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.observe, limitBody)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, bgcheck.Errorf(bgcheck.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, bgcheck.Errorf(codeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
	})

	r.Get("/healthz", s.handleHealth)
	r.Get("/readyz", s.handleReady)

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/openapi.json", handleOpenAPI)

		r.Group(func(r chi.Router) {
			r.Use(s.requireAPIKey)
			r.Route("/webhooks/endpoints", s.endpointRoutes)
			r.Route("/candidates", s.candidateRoutes)
			if s.extraKeyRoutes != nil {
				s.extraKeyRoutes(r)
			}
		})
	})
	return r
}

func (s *Server) endpointRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeWebhooksRead), requireScope(bgcheck.ScopeWebhooksWrite)
	r.With(read).Get("/", s.handleEndpointList)
	r.With(write).Post("/", s.handleEndpointCreate)
	r.Route("/{endpointID}", func(r chi.Router) {
		r.With(read).Get("/", s.handleEndpointGet)
		r.With(write).Patch("/", s.handleEndpointUpdate)
		r.With(write).Delete("/", s.handleEndpointDelete)
		r.With(write).Post("/rotate-secret", s.handleEndpointRotateSecret)
	})
}

func (s *Server) candidateRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeCandidatesRead), requireScope(bgcheck.ScopeCandidatesWrite)
	r.With(read).Get("/", s.handleCandidateList)
	r.With(write).Post("/", s.handleCandidateCreate)
	r.Route("/{candidateID}", func(r chi.Router) {
		r.With(read).Get("/", s.handleCandidateGet)
		r.With(write).Patch("/", s.handleCandidateUpdate)
		r.With(write).Delete("/", s.handleCandidateDelete)
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady answers 200 when the database answers within two seconds.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		requestLogger(r).Warn("readiness: database unreachable", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "unreachable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "database": "ok"})
}

//go:embed openapi.json
var openAPIDocument []byte

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPIDocument)
}
