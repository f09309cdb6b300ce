// Package api is bgcheck's HTTP interface: a chi router under /api/v1 with API-key
// authentication, problem+json errors (API.md §1), the routes of API.md §4 and the candidates
// family, and the portal's sign-in (§3) and admin (§5) routes with bearer tokens.
package api

import (
	"context"
	_ "embed"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/metrics"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/ratelimit/limiter"
	"github.com/bgcheck/bgcheck/sso"
)

// Options are the settings of the HTTP layer.
type Options struct {
	// AllowPrivateWebhookURLs lets endpoints point at loopback, private and link-local
	// addresses: for local development and tests only.
	AllowPrivateWebhookURLs bool
	// TrustedProxies are the peers whose X-Forwarded-For and Forwarded headers are believed.
	TrustedProxies []netip.Prefix
	// ProxyHeader is the header the trusted proxies write the client's address into:
	// ProxyHeaderXFF (the default) or ProxyHeaderForwarded (BGCHECK_TRUSTED_PROXY_HEADER).
	ProxyHeader string
	// RateLimits counts requests against the limits of API.md §7 and sets the X-RateLimit-*
	// headers. nil means no limits at all, which suits tests that are not about limits;
	// apiserver always sets it (from BGCHECK_RATE_LIMIT_*, in memory or in Redis).
	RateLimits *limiter.Limiter
	Logger     *slog.Logger
	// Temporal, when set, is checked by /readyz beside the database.
	Temporal client.Client
	// Workflows answers whether a delivery's workflow still runs (package dispatcher, which owns
	// the workflows); with it, a pending delivery whose workflow has ended can be redelivered.
	// nil treats every pending delivery as in progress.
	Workflows DeliveryWorkflows
	// Tokens signs and checks portal JWTs; nil makes a random key (tokens then die with the
	// process: fine for tests, wrong for production, where BGCHECK_JWT_SIGNING_KEY is set).
	Tokens *auth.Tokens
	// Mailer sends magic links; nil logs them.
	Mailer MagicLinkSender
	// PortalURL is the base of magic links (BGCHECK_PORTAL_URL).
	PortalURL string
	// Metrics counts requests, rate-limit refusals and events; nil counts nothing.
	Metrics *metrics.API
	// Gatherer is what GET /metrics serves: the process's registry. nil serves an empty page.
	Gatherer prometheus.Gatherer
	// TemporalUIURL is the Temporal Web UI the dashboard links delivery workflows to
	// (BGCHECK_TEMPORAL_UI_URL); "" means config.DefaultTemporalUIURL.
	TemporalUIURL string
	// TemporalNamespace is the namespace of the delivery workflows, for the dashboard's links
	// (TEMPORAL_NAMESPACE); "" means config.DefaultTemporalNamespace.
	TemporalNamespace string
	// RequestTimeout bounds every request's work, database calls included: past it the caller
	// gets 503 and the work is abandoned. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// PublicURL is where browsers and identity providers reach this API (BGCHECK_PUBLIC_URL):
	// the base of the SSO redirect URI, ACS URL and SP entity id, and of the dashboard the SSO
	// callbacks return to. "" means config.DefaultPublicURL.
	PublicURL string
	// SSOPrivateNetworks are the non-public networks identity providers may be reached on
	// (BGCHECK_SSO_PRIVATE_NETWORKS), and the only ones plain http is accepted to; every other
	// IdP fetch must reach a public address.
	SSOPrivateNetworks []netip.Prefix
	// Resolver looks up the DNS TXT records that prove an SSO connection holds an e-mail
	// domain; nil means net.DefaultResolver. Tests point it at a DNS server of their own.
	Resolver *net.Resolver
	// PasswordSlots bounds concurrent argon2id work (login, register); 0 means
	// auth.DefaultPasswordSlots. Past it a sign-in waits a moment, then gets 503.
	PasswordSlots int
}

// The headers a trusted proxy may name the client in.
const (
	ProxyHeaderXFF       = "X-Forwarded-For"
	ProxyHeaderForwarded = "Forwarded"
)

// DeliveryWorkflows is what the API asks about delivery workflows: never Temporal directly.
type DeliveryWorkflows interface {
	WorkflowRunning(ctx context.Context, deliveryID string, series int) (bool, error)
}

// DefaultRequestTimeout is under the server's 30 s write timeout, so the caller hears why.
const DefaultRequestTimeout = 20 * time.Second

// Server holds the HTTP layer's dependencies.
type Server struct {
	db   *postgres.DB
	keys *auth.Verifier
	opts Options
	log  *slog.Logger

	tokens       *auth.Tokens
	sessions     *auth.SessionChecker
	passwords    *auth.PasswordSlots
	metrics      *metrics.API
	serveMetrics http.Handler
	background   sync.WaitGroup // magic-link mails in flight
	ssoClient    *http.Client   // reaches identity providers through the address guard
	oidc         *sso.OIDC

	// extraKeyRoutes, when set (by benchmarks), adds routes behind the API-key middleware.
	extraKeyRoutes func(chi.Router)
}

// New returns a Server; call Handler for its routes.
func New(db *postgres.DB, keys *auth.Verifier, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Tokens == nil {
		opts.Tokens, _ = auth.NewTokens(auth.RandomKey())
	}
	if opts.Mailer == nil {
		opts.Mailer = mail.LogSender{Log: log}
	}
	if opts.PortalURL == "" {
		opts.PortalURL = config.DefaultPortalURL
	}
	if opts.TemporalNamespace == "" {
		opts.TemporalNamespace = config.DefaultTemporalNamespace
	}
	if opts.TemporalUIURL == "" {
		opts.TemporalUIURL = config.DefaultTemporalUIURL
	}
	if opts.PublicURL == "" {
		opts.PublicURL = config.DefaultPublicURL
	}
	if opts.Gatherer == nil {
		opts.Gatherer = prometheus.NewRegistry()
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	s := &Server{db: db, keys: keys, opts: opts, log: log, tokens: opts.Tokens,
		metrics: opts.Metrics, serveMetrics: metrics.Handler(opts.Gatherer, log),
		ssoClient: sso.NewHTTPClient(opts.SSOPrivateNetworks)}
	s.oidc = sso.NewOIDC(s.ssoClient, opts.SSOPrivateNetworks)
	if db != nil {
		s.sessions = auth.NewSessionChecker(db, 0)
		s.passwords = auth.NewPasswordSlots(opts.PasswordSlots)
	}
	return s
}

// Wait blocks until background work started by requests (magic-link mails) is done; call it after
// the HTTP server has shut down.
func (s *Server) Wait() { s.background.Wait() }

// Handler returns the router of every route the service serves.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.observe, limitBody)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, bgcheck.Errorf(bgcheck.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(handleMethodNotAllowed)

	r.Get("/healthz", s.handleHealth)
	r.Get("/readyz", s.handleReady)
	r.Get("/metrics", s.handleMetrics)
	s.dashboardRoutes(r)

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/openapi.json", handleOpenAPI)

		r.Route("/auth", func(r chi.Router) {
			// A wrong method on a sign-in route costs what the route costs: otherwise a 405
			// would be a free probe, outside every budget.
			r.MethodNotAllowed(s.limitByAddress(ratelimit.Auth)(http.HandlerFunc(handleMethodNotAllowed)).ServeHTTP)
			r.Group(func(r chi.Router) {
				r.Use(s.limitByAddress(ratelimit.Auth))
				r.Post("/register", s.handleRegister)
				r.Post("/login", s.handleLogin)
				r.Post("/refresh", s.handleRefresh)
				r.Post("/magic-link/request", s.handleMagicLinkRequest)
				r.Post("/magic-link/verify", s.handleMagicLinkVerify)
				r.Post("/invitation", s.handleInvitationAccept)
				r.Route("/sso", s.ssoSignInRoutes)
			})
			r.With(s.requireBearer).Post("/logout", s.handleLogout) // rate class consumer, as a bearer route
		})
		r.With(s.requireBearer).Get("/me", s.handleMe)
		r.Route("/admin", s.adminRoutes)
		r.Route("/consumer", s.consumerRoutes)

		r.Group(func(r chi.Router) {
			r.Use(s.requireAPIKey, s.idempotent)
			r.Route("/webhooks/endpoints", s.endpointRoutes)
			r.Route("/webhooks/deliveries/{deliveryID}", s.deliveryRoutes)
			r.Route("/events", s.eventRoutes)
			r.With(requireScope(bgcheck.ScopeWebhooksRead)).Get("/event-types", handleEventTypes)
			r.Route("/candidates", s.candidateRoutes)
			r.With(requireScope(bgcheck.ScopeChecksRead)).Get("/packages", s.handlePackageList)
			r.Route("/checks", s.checkRoutes)
			r.Route("/adverse-actions", s.adverseActionRoutes)
			r.Route("/disputes", s.disputeRoutes)
			r.Route("/usage", s.usageRoutes)
			r.Route("/billing", s.billingRoutes)
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
		r.With(write).Post("/pause", s.handleEndpointPause)
		r.With(write).Post("/resume", s.handleEndpointResume)
		r.With(write).Post("/recover", s.handleEndpointRecover)
		r.With(read).Get("/recoveries/{recoveryID}", s.handleEndpointRecovery)
		r.With(read).Get("/deliveries", s.handleEndpointDeliveries)
	})
}

func (s *Server) deliveryRoutes(r chi.Router) {
	r.With(requireScope(bgcheck.ScopeWebhooksRead)).Get("/", s.handleDeliveryGet)
	r.With(requireScope(bgcheck.ScopeWebhooksWrite)).Post("/redeliver", s.handleDeliveryRedeliver)
}

func (s *Server) eventRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeWebhooksRead), requireScope(bgcheck.ScopeWebhooksWrite)
	r.With(read).Get("/", s.handleEventList)
	r.With(write).Post("/test", s.handleEventTest)
	r.With(read).Get("/{eventID}", s.handleEventGet)
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

// adminRoutes are the account dashboard's routes (API.md §5): bearer tokens of admin users only,
// acting on the admin's account in both modes at once.
func (s *Server) adminRoutes(r chi.Router) {
	r.Use(s.requireBearer, requireRole(bgcheck.RoleAdmin))
	r.Get("/overview", s.handleAdminOverview)
	r.Get("/deliveries", s.handleAdminDeliveries)
	r.Get("/deliveries/{deliveryID}", s.handleAdminDeliveryGet)
	r.Get("/webhook-endpoints", s.handleAdminEndpoints)
	r.Post("/webhook-endpoints/{endpointID}/enable", s.handleAdminEndpointEnable)
	r.Post("/deliveries/{deliveryID}/redeliver", s.handleAdminRedeliver)
	r.Get("/checks", s.handleAdminChecks)
	r.Get("/checks/{checkID}", s.handleAdminCheckGet)
	r.Get("/adverse-actions", s.handleAdverseActionList)
	r.Get("/adverse-actions/{adverseActionID}", s.handleAdverseActionGet)
	r.Post("/adverse-actions/{adverseActionID}/cancel", s.handleAdverseActionCancel)
	r.Get("/disputes", s.handleDisputeList)
	r.Get("/disputes/{disputeID}", s.handleDisputeGet)
	r.Post("/disputes/{disputeID}/resolve", s.handleDisputeResolve)
	r.Route("/billing", func(r chi.Router) {
		r.Use(refuseCardNumbers)
		r.Get("/", s.handleAdminBilling)
		r.Get("/invoices", s.handleInvoiceList)
		r.Get("/invoices/{invoiceID}", s.handleInvoiceGet)
		r.Get("/payment-methods", s.handlePaymentMethodList)
		r.Post("/payment-methods", s.handlePaymentMethodAdd)
		r.Post("/payment-methods/{paymentMethodID}/default", s.handlePaymentMethodDefault)
		r.Delete("/payment-methods/{paymentMethodID}", s.handlePaymentMethodRemove)
	})
	r.Route("/sso", s.ssoAdminRoutes)
	r.Get("/settings", s.handleAdminSettingsGet)
	r.Patch("/settings", s.handleAdminSettingsUpdate)
	r.Route("/api-keys", func(r chi.Router) {
		r.Get("/", s.handleAPIKeyList)
		r.Post("/", s.handleAPIKeyCreate)
		r.Delete("/{keyID}", s.handleAPIKeyRevoke)
	})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady answers 200 when the database and Temporal both answer within two seconds.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out, status := map[string]string{"status": "ok", "database": "ok"}, http.StatusOK
	if err := s.db.Ping(ctx); err != nil {
		requestLogger(r).Warn("readiness: database unreachable", "err", err)
		out["database"], out["status"], status = "unreachable", "unavailable", http.StatusServiceUnavailable
	}
	if s.opts.Temporal != nil {
		out["temporal"] = "ok"
		if _, err := s.opts.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			requestLogger(r).Warn("readiness: Temporal unreachable", "err", err)
			out["temporal"], out["status"], status = "unreachable", "unavailable", http.StatusServiceUnavailable
		}
	}
	writeJSON(w, status, out)
}

// handleMetrics serves the process's metrics in the Prometheus text format (API.md §8): no
// authentication and no rate limit, like /healthz, so keep the port away from the public or
// filter /metrics at the proxy.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.serveMetrics.ServeHTTP(w, r)
}

//go:embed openapi.json
var openAPIDocument []byte

func handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPIDocument)
}

func handleMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, bgcheck.Errorf(codeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
}
