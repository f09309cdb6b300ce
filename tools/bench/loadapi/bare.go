package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/go-chi/chi/v5"
)

// serveBare is the baseline: a chi router whose one route answers GET
// /api/v1/webhooks/endpoints with the bytes of bodyFile (a page captured from the real API), with
// the API's server timeouts and nothing else: no middleware, no key check, no database.
func serveBare(ctx context.Context, addr, bodyFile string) error {
	if bodyFile == "" {
		return errors.New("-serve-bare needs -bare-body")
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return err
	}
	r := chi.NewRouter()
	r.Get("/api/v1/webhooks/endpoints", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(body)
	})
	srv := &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = srv.Shutdown(shutdownCtx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
