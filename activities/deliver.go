// Package activities holds the side effects of bgcheck's workflows. Activities are methods on a
// struct of their dependencies and are idempotent: the workflow passes the key (delivery id and
// attempt number), and repeating an attempt replaces its record.
package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/metrics"
	"github.com/bgcheck/bgcheck/netguard"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

// AttemptTimeout bounds one POST, from connecting to reading the answer (API.md §6: 30 s).
const AttemptTimeout = 30 * time.Second

const (
	maxAnswerRead = 64 << 10 // read at most this much of an answer
	snippetBytes  = 1 << 10  // and keep this much of it
	userAgent     = "bgcheck-webhooks/1.0 (+https://bgcheck.example/docs/webhooks)"
)

// Activities holds what delivery attempts need.
type Activities struct {
	DB   *postgres.DB
	HTTP *http.Client
	Log  *slog.Logger
	// Timeout bounds one POST; zero means AttemptTimeout. Tests shorten it.
	Timeout time.Duration
	// Metrics counts attempts by outcome, once each is recorded; nil counts nothing.
	Metrics *metrics.Worker
	// Limits bounds attempts in flight per endpoint and per account; nil bounds nothing.
	Limits *InFlightLimits
}

// AttemptInput names one attempt of a delivery.
type AttemptInput struct {
	DeliveryID string
	Number     int
	// RetryAfter is the wait before the next attempt if this one fails; unused when Final.
	RetryAfter time.Duration
	// Final is set on the last attempt of the schedule: if it fails, the delivery has failed.
	Final bool
	// MayDefer says the workflow understands AttemptResult.Deferred (workflows started before
	// in-flight limits existed do not, and are never deferred).
	MayDefer bool
}

// AttemptResult is what became of the delivery: succeeded, failed, canceled, or pending when a
// retry follows.
type AttemptResult struct {
	Status     bgcheck.DeliveryStatus
	StatusCode int
	Error      string
	// Deferred means the attempt was not made: its endpoint or account already has as many
	// attempts in flight as Limits allow. Nothing was sent or recorded; ask again later.
	Deferred bool
	// Paused means the attempt was not made because the endpoint is paused: nothing was sent or
	// counted; wait for the resume (a signal) and ask again. A paused attempt is also Deferred,
	// so a workflow (or worker) that predates pauses backs off and asks again, as for an
	// in-flight limit: no version marker is needed, and a delivery's history stays as short.
	Paused bool
}

// DeliverWebhook makes one attempt: it reads the event's bytes and the endpoint's current URL and
// secret, signs and POSTs, and records the attempt and the delivery's new state. A deleted or
// disabled endpoint cancels the delivery instead. A failed POST is a result, not an error: an
// error means the attempt could not be made or recorded, and the workflow tries it again.
func (a *Activities) DeliverWebhook(ctx context.Context, in AttemptInput) (AttemptResult, error) {
	target, err := a.DB.FindAttemptTarget(ctx, in.DeliveryID)
	if errors.Is(err, bgcheck.ErrNotFound) {
		// The delivery is gone (its account was deleted): nothing is left to deliver or record.
		a.Metrics.Canceled()
		return AttemptResult{Status: bgcheck.DeliveryCanceled, Error: "the delivery no longer exists"}, nil
	}
	if err != nil {
		return AttemptResult{}, fmt.Errorf("load delivery %s: %w", in.DeliveryID, err)
	}
	if target.Status == bgcheck.DeliveryCanceled || !target.Live {
		if err := a.DB.CancelDelivery(ctx, in.DeliveryID); err != nil {
			return AttemptResult{}, err
		}
		a.Metrics.Canceled()
		return AttemptResult{Status: bgcheck.DeliveryCanceled}, nil
	}

	if target.Paused && in.MayDefer { // workflows from before deferrals existed are not held
		if err := a.DB.HoldDelivery(ctx, in.DeliveryID); err != nil {
			return AttemptResult{}, err
		}
		return AttemptResult{Paused: true, Deferred: true}, nil
	}
	if in.MayDefer {
		if !a.Limits.tryAcquire(target.AccountID, target.EndpointID) {
			return AttemptResult{Deferred: true}, nil
		}
		defer a.Limits.release(target.AccountID, target.EndpointID)
	}

	started := time.Now()
	code, snippet, postErr := a.post(ctx, target, in.Number)
	rec := postgres.AttemptRecord{
		DeliveryID: in.DeliveryID, Number: in.Number, StartedAt: started, Duration: time.Since(started),
		StatusCode: code, ResponseSnippet: snippet,
	}
	switch {
	case postErr == nil && code >= 200 && code < 300:
		rec.Status = bgcheck.DeliverySucceeded
	case postErr != nil:
		rec.Error = postErr.Error()
	default:
		rec.Error = "the endpoint answered " + strconv.Itoa(code) + " " + http.StatusText(code)
		if code >= 300 && code < 400 {
			rec.Error += " (redirects are not followed)"
		}
	}
	if rec.Status == "" {
		if in.Final {
			rec.Status = bgcheck.DeliveryFailed
		} else {
			rec.Status = bgcheck.DeliveryPending
			next := started.Add(rec.Duration + in.RetryAfter)
			rec.NextAttemptAt = &next
		}
	}
	if err := a.DB.RecordAttempt(ctx, rec); err != nil {
		return AttemptResult{}, fmt.Errorf("record attempt %d of %s: %w", in.Number, in.DeliveryID, err)
	}
	a.Metrics.Attempt(attemptOutcome(rec.Status), rec.Duration)
	a.Log.Info("delivery attempt", "delivery_id", in.DeliveryID, "event_id", target.EventID, "attempt", in.Number,
		"status_code", code, "outcome", rec.Status, "duration", rec.Duration, "error", rec.Error)
	return AttemptResult{Status: rec.Status, StatusCode: code, Error: rec.Error}, nil
}

// attemptOutcome names a recorded attempt's outcome in the metrics by the delivery's new status.
func attemptOutcome(s bgcheck.DeliveryStatus) string {
	switch s {
	case bgcheck.DeliverySucceeded:
		return metrics.OutcomeSucceeded
	case bgcheck.DeliveryFailed:
		return metrics.OutcomeFailedFinal
	}
	return metrics.OutcomeFailedAttempt
}

// post sends the event's bytes to the endpoint and returns the status code (0 without an answer)
// and the start of the answer's body.
func (a *Activities) post(ctx context.Context, t *postgres.AttemptTarget, attempt int) (int, string, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = AttemptTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(t.Body))
	if err != nil {
		return 0, "", fmt.Errorf("bad endpoint URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	secrets := []string{t.Secret}
	if t.PreviousSecret != "" { // a rotation's overlap: both sign
		secrets = append(secrets, t.PreviousSecret)
	}
	req.Header.Set(webhook.SignatureHeader, webhook.SignAll(secrets, t.Body))
	now := time.Now()
	standard, err := webhook.SignStandardAll(secrets, t.EventID, now, t.Body)
	if err != nil {
		return 0, "", fmt.Errorf("the endpoint's secret: %w", err)
	}
	req.Header.Set(webhook.StandardIDHeader, t.EventID)
	req.Header.Set(webhook.StandardTimestampHeader, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(webhook.StandardSignatureHeader, standard)
	req.Header.Set("X-Service-Event-Id", t.EventID)
	req.Header.Set("X-Service-Event-Type", t.EventType)
	req.Header.Set("X-Service-Delivery-Id", t.DeliveryID)
	req.Header.Set("X-Service-Delivery-Attempt", strconv.Itoa(attempt))
	res, err := a.HTTP.Do(req)
	if err != nil {
		return 0, "", describeTransportError(err, timeout)
	}
	defer res.Body.Close()
	body, readErr := io.ReadAll(io.LimitReader(res.Body, maxAnswerRead))
	snippet := body[:min(len(body), snippetBytes)]
	for len(snippet) > 0 && !utf8.Valid(snippet) { // do not cut a character in half
		snippet = snippet[:len(snippet)-1]
	}
	if readErr != nil {
		return res.StatusCode, string(snippet), describeTransportError(readErr, timeout)
	}
	return res.StatusCode, string(snippet), nil
}

// describeTransportError says in a line why no complete answer came, without the noise of
// nested url.Error text.
func describeTransportError(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("no complete answer within %s", timeout)
	case errors.Is(err, netguard.ErrBlockedAddress):
		return errBlockedAddress
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	}
	return err
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

var errBlockedAddress = errors.New("the endpoint resolves to a private, loopback or link-local address, which webhooks may not reach")

// NewHTTPClient returns the client deliveries are sent with: no redirects followed, no proxy from
// the environment, the whole exchange bounded by AttemptTimeout, and, unless allowPrivate,
// connections only to public addresses. The address is checked after DNS resolution, at connect
// time, so a name that resolves to a private address is refused even if it looked public when the
// endpoint was saved.
func NewHTTPClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = netguard.DialControl(nil)
	}
	return &http.Client{
		Timeout: AttemptTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			MaxIdleConns:          512,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: AttemptTimeout,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
