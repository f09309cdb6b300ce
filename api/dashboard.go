package api

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// dashboardFiles are the admin dashboard's static page, script and style sheet: no build step,
// embedded so the binary serves them. The shell holds no data; every figure it shows comes from
// the admin routes, which want an admin's bearer token.
//
//go:embed dashboard
var dashboardFiles embed.FS

// dashboardCSP keeps the page to its own script and style (no inline code, no other origin), so
// data that slipped into the page could not run even if it were ever written as markup.
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// dashboardRoutes serves the admin dashboard under /dashboard/, outside /api/v1 and the OpenAPI
// document: a page for browsers, not part of the API.
func (s *Server) dashboardRoutes(r chi.Router) {
	sub, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	files := http.StripPrefix("/dashboard/", http.FileServerFS(sub))
	r.Get("/dashboard", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/dashboard/", http.StatusMovedPermanently)
	})
	r.Route("/dashboard/", func(r chi.Router) {
		r.Use(dashboardHeaders)
		r.Get("/config.json", s.handleDashboardConfig)
		r.Get("/*", files.ServeHTTP)
	})
}

func dashboardHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// handleDashboardConfig tells the page what the server was configured with; nothing in it is
// secret or per account.
func (s *Server) handleDashboardConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{
		"temporal_ui_url": s.opts.TemporalUIURL, "temporal_namespace": s.opts.TemporalNamespace,
	})
}
