package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
)

const (
	// listenMaxBody caps a delivery's body: events are far smaller (the API takes at most 1 MiB).
	listenMaxBody = 4 << 20
	// listenForwardTimeout matches the sender's own limit on one attempt (API.md §6: 30 s).
	listenForwardTimeout = 30 * time.Second
	// listenMaxAnswer is how much of the forward's answer is passed back to the sender.
	listenMaxAnswer = 64 << 10
)

// cmdListen is a local webhook receiver, as `stripe listen` is for Stripe: it checks each
// delivery's X-Service-Signature with the endpoint's secret, prints a line per delivery, and with
// --forward-to passes it on to the application being developed. It needs no database.
//
// The answers: a delivery whose signature does not hold gets 401 and is not forwarded (the
// sender records a failed attempt, as the application would have refused it); one that holds gets
// the forward's status and body, 502 when the forward got no answer, or 204 when not forwarding.
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
	l := &listener{
		secret: *secret, path: *path, forward: forward, out: stdout,
		client: &http.Client{
			Timeout: listenForwardTimeout,
			// The answer is the sender's to see, redirect included: bgcheck does not follow them.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	// The first line names the address, so that scripts (and tests) can learn the port of :0.
	l.printf("listening on http://%s%s", ln.Addr(), *path)
	if forward != nil {
		l.printf("forwarding deliveries with a valid signature to %s", forward)
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

// listener receives deliveries; see cmdListen.
type listener struct {
	secret  string
	path    string
	forward *url.URL
	client  *http.Client

	mu  sync.Mutex // one line at a time on out
	out io.Writer
}

func (l *listener) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format+"\n", args...)
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != l.path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "deliveries are POSTed", http.StatusMethodNotAllowed)
		return
	}
	received := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, listenMaxBody))
	if err != nil {
		http.Error(w, "cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	line := l.describe(received, r.Header, body)

	if err := webhook.Verify(l.secret, body, r.Header.Get(webhook.SignatureHeader)); err != nil {
		l.printf("%s signature=INVALID answered=401", line)
		http.Error(w, "the signature does not match the body for this secret", http.StatusUnauthorized)
		return
	}
	if l.forward == nil {
		l.printf("%s signature=ok answered=204", line)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	status, header, answer, err := l.forwardDelivery(r.Context(), r.Header, body)
	if err != nil {
		l.printf("%s signature=ok forward-error=%q answered=502", line, err.Error())
		http.Error(w, "forwarding failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	l.printf("%s signature=ok forwarded=%d answered=%d", line, status, status)
	if ct := header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// describe is the start of a delivery's line: when it came, the event's type and id, and the
// attempt. Type and id come from the X-Service-Event-* headers, else from the envelope.
func (l *listener) describe(at time.Time, h http.Header, body []byte) string {
	eventType, eventID := h.Get("X-Service-Event-Type"), h.Get("X-Service-Event-Id")
	if eventType == "" || eventID == "" {
		var env webhook.Envelope
		_ = json.Unmarshal(body, &env)
		eventType, eventID = cmp.Or(eventType, env.Type), cmp.Or(eventID, env.ID)
	}
	return fmt.Sprintf("%s %s %s attempt=%s", at.Format(time.RFC3339),
		cmp.Or(eventType, "-"), cmp.Or(eventID, "-"), cmp.Or(h.Get("X-Service-Delivery-Attempt"), "-"))
}

// forwardDelivery POSTs the raw body with Content-Type and every X-Service-* header (the
// signature included, so the application can verify it too) and returns the answer.
func (l *listener) forwardDelivery(ctx context.Context, h http.Header, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forward.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for name, values := range h {
		if name == "Content-Type" || strings.HasPrefix(name, "X-Service-") {
			req.Header[name] = values
		}
	}
	res, err := l.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, listenMaxAnswer))
	return res.StatusCode, res.Header, answer, nil
}
