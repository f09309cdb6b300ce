package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck/webhook/listener"
)

// cmdListen runs a local webhook receiver (package listener), as `stripe listen` does for Stripe:
// it prints a line per delivery and, with --forward-to, passes valid ones on to the application
// being developed. It needs no database.
func cmdListen(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	secret := fs.String("secret", os.Getenv("BGCHECK_WEBHOOK_SECRET"), "the endpoint's signing secret (whsec_…); default $BGCHECK_WEBHOOK_SECRET")
	addr := fs.String("addr", "127.0.0.1:9000", "address to listen on")
	path := fs.String("path", "/webhooks", "path that receives deliveries")
	forwardTo := fs.String("forward-to", "", "URL to forward each delivery with a valid signature to")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !strings.HasPrefix(*secret, "whsec_") {
		return usageError("listen: --secret must be the endpoint's secret (whsec_…)")
	}
	if !strings.HasPrefix(*path, "/") {
		return usageError("listen: --path must start with /")
	}
	var forward *url.URL
	if *forwardTo != "" {
		u, err := url.Parse(*forwardTo)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError("listen: --forward-to must be an http:// or https:// URL")
		}
		forward = u
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	l := listener.New(*secret, *path, forward, stdout)
	// The first line names the address, so that scripts (and tests) can learn the port of :0.
	l.Printf("listening on http://%s%s", ln.Addr(), *path)
	if forward != nil {
		l.Printf("forwarding deliveries with a valid signature to %s", forward)
	}
	srv := &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
