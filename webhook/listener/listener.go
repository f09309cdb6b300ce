// Package listener is a local webhook receiver for development, as `stripe listen` is for Stripe:
// `bgcheckctl listen` and `make dev` run it. It needs nothing but the endpoint's secret.
package listener

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
)

const (
	// maxBody caps a delivery's body: events are far smaller (the API takes at most 1 MiB).
	maxBody = 4 << 20
	// forwardTimeout matches the sender's own limit on one attempt (API.md §6: 30 s).
	forwardTimeout = 30 * time.Second
	// maxAnswer is how much of the forward's answer is passed back to the sender.
	maxAnswer = 64 << 10
)

// New returns a receiver of deliveries POSTed to path, verified with secret, each printed as a
// line on out; forward, when not nil, receives every delivery whose signature holds.
func New(secret, path string, forward *url.URL, out io.Writer) *Receiver {
	return &Receiver{
		secret: secret, path: path, forward: forward, out: out,
		client: &http.Client{
			Timeout: forwardTimeout,
			// The answer is the sender's to see, redirect included: bgcheck does not follow them.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Receiver is a local webhook receiver: it checks each delivery's X-Service-Signature with the
// endpoint's secret, prints a line per delivery, and optionally passes valid ones on.
//
// The answers: a delivery whose signature does not hold gets 401 and is not forwarded (the sender
// records a failed attempt, as the application would have refused it); one that holds gets the
// forward's status and body, 502 when the forward got no answer, or 204 when not forwarding.
type Receiver struct {
	secret  string
	path    string
	forward *url.URL
	client  *http.Client

	mu  sync.Mutex // one line at a time on out
	out io.Writer
}

// Printf writes one line to the receiver's output.
func (l *Receiver) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, format+"\n", args...)
}

// ServeHTTP receives one delivery.
func (l *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "cannot read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	line := l.describe(received, r.Header, body)
	standard := l.standardVerdict(received, r.Header, body)

	if err := webhook.Verify(l.secret, body, r.Header.Get(webhook.SignatureHeader)); err != nil {
		l.Printf("%s signature=INVALID %s answered=401", line, standard)
		http.Error(w, "the signature does not match the body for this secret", http.StatusUnauthorized)
		return
	}
	if l.forward == nil {
		l.Printf("%s signature=ok %s answered=204", line, standard)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	status, header, answer, err := l.forwardDelivery(r.Context(), r.Header, body)
	if err != nil {
		l.Printf("%s signature=ok %s forward-error=%q answered=502", line, standard, err.Error())
		http.Error(w, "forwarding failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	l.Printf("%s signature=ok %s forwarded=%d answered=%d", line, standard, status, status)
	if ct := header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// standardVerdict says whether the Standard Webhooks headers hold: "standard=ok", or what is wrong
// with them (a stale timestamp, a bad signature, missing headers). X-Service-Signature decides
// the answer; this one is shown beside it.
func (l *Receiver) standardVerdict(received time.Time, h http.Header, body []byte) string {
	err := webhook.VerifyStandard(l.secret, body, h.Get(webhook.StandardIDHeader), h.Get(webhook.StandardTimestampHeader),
		h.Get(webhook.StandardSignatureHeader), webhook.DefaultTolerance, received)
	switch {
	case err == nil:
		return "standard=ok"
	case errors.Is(err, webhook.ErrTimestampOutOfTolerance):
		return "standard=STALE"
	case errors.Is(err, webhook.ErrMissingHeaders):
		return "standard=absent"
	}
	return "standard=INVALID"
}

// describe is the start of a delivery's line: when it came, the event's type and id, and the
// attempt. Type and id come from the X-Service-Event-* headers, else from the envelope.
func (l *Receiver) describe(at time.Time, h http.Header, body []byte) string {
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
func (l *Receiver) forwardDelivery(ctx context.Context, h http.Header, body []byte) (int, http.Header, []byte, error) {
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
	answer, _ := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	return res.StatusCode, res.Header, answer, nil
}
