package activities_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/webhook"
)

// fixture is one tenant, one endpoint at url, and one event's delivery to it.
type fixture struct {
	db         *postgres.DB
	tenant     bgcheck.Tenant
	endpointID string
	secret     string
	deliveryID string
	event      *bgcheck.Event
}

func newFixture(t *testing.T, url string) *fixture {
	t.Helper()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: bgcheck.NewID("u") + "@example.com", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tn := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeTest}
	secret := webhook.NewSecret()
	ep, err := db.CreateEndpoint(ctx, tn, bgcheck.WebhookEndpoint{URL: url, Events: []string{"*"}, Enabled: true, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := db.CreateEvent(ctx, tn, webhook.EventCheckCompleted, webhook.SampleData(webhook.EventCheckCompleted))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, tenant: tn, endpointID: ep.ID, secret: secret, event: ev}
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM deliveries WHERE event_id = $1`, ev.ID).Scan(&f.deliveryID); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) acts(allowPrivate bool) *activities.Activities {
	return &activities.Activities{DB: f.db, HTTP: activities.NewHTTPClient(allowPrivate), Log: slog.New(slog.DiscardHandler), Timeout: 2 * time.Second}
}

func (f *fixture) delivery(t *testing.T) *bgcheck.Delivery {
	t.Helper()
	d, err := f.db.FindDelivery(context.Background(), f.tenant, f.deliveryID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// received is one request as the receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

func receiver(t *testing.T, answer http.HandlerFunc) (*httptest.Server, func() []received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), body})
		mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received { mu.Lock(); defer mu.Unlock(); return append([]received(nil), got...) }
}

func TestSuccessfulAttemptIsSignedAndRecorded(t *testing.T) {
	srv, got := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"ok":true}`)
	})
	f := newFixture(t, srv.URL+"/hook")
	res, err := f.acts(true).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1, RetryAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != bgcheck.DeliverySucceeded || res.StatusCode != 202 {
		t.Fatalf("result %+v", res)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if string(r.body) != string(f.event.Body) {
		t.Fatalf("body %s\nwant the stored envelope %s", r.body, f.event.Body)
	}
	if err := webhook.Verify(f.secret, r.body, r.header.Get("X-Service-Signature")); err != nil {
		t.Fatalf("signature: %v", err)
	}
	for h, want := range map[string]string{
		"Content-Type": "application/json", "X-Service-Event-Id": f.event.ID, "X-Service-Event-Type": "check.completed",
		"X-Service-Delivery-Attempt": "1", "X-Service-Delivery-Id": f.deliveryID,
	} {
		if r.header.Get(h) != want {
			t.Errorf("%s: %q, want %q", h, r.header.Get(h), want)
		}
	}
	if !strings.HasPrefix(r.header.Get("User-Agent"), "bgcheck-webhooks/") {
		t.Errorf("User-Agent %q", r.header.Get("User-Agent"))
	}
	d := f.delivery(t)
	if d.Status != bgcheck.DeliverySucceeded || d.AttemptCount != 1 || *d.LastStatusCode != 202 || d.NextAttemptAt != nil || d.LastError != nil {
		t.Fatalf("delivery %+v", d)
	}
	a := d.Attempts[0]
	if a.Number != 1 || *a.StatusCode != 202 || *a.ResponseSnippet != `{"ok":true}` || a.Error != nil {
		t.Fatalf("attempt %+v", a)
	}
}

// Anything but a 2xx within the time limit is a failed attempt: another status, a redirect (not
// followed), a refused connection, an answer too slow.
func TestFailedAttempts(t *testing.T) {
	slow := make(chan struct{})
	t.Cleanup(func() { close(slow) })
	redirectTarget, targetGot := receiver(t, func(w http.ResponseWriter, r *http.Request) {})
	refused, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedURL := "http://" + refused.Addr().String() + "/hook"
	refused.Close()

	cases := []struct {
		name      string
		answer    http.HandlerFunc
		url       string
		wantCode  int
		wantError string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "kaputt", 500) }, "", 500, "answered 500"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "", 404, "answered 404"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, redirectTarget.URL, http.StatusFound)
		}, "", 302, "redirects are not followed"},
		{"refused", nil, refusedURL, 0, "connection refused"},
		{"too slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		}, "", 0, "no complete answer within 2s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := c.url
			if url == "" {
				srv, _ := receiver(t, c.answer)
				url = srv.URL
			}
			f := newFixture(t, url)
			res, err := f.acts(true).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1, RetryAfter: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != bgcheck.DeliveryPending || res.StatusCode != c.wantCode || !strings.Contains(res.Error, c.wantError) {
				t.Fatalf("result %+v, want pending, code %d, error containing %q", res, c.wantCode, c.wantError)
			}
			d := f.delivery(t)
			if d.Status != bgcheck.DeliveryPending || d.AttemptCount != 1 || d.NextAttemptAt == nil ||
				d.NextAttemptAt.Before(time.Now().Add(50*time.Second)) || d.LastError == nil {
				t.Fatalf("delivery %+v", d)
			}
			// The final attempt's failure fails the delivery.
			res, err = f.acts(true).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 2, Final: true})
			if err != nil || res.Status != bgcheck.DeliveryFailed {
				t.Fatalf("final attempt: %+v %v", res, err)
			}
			if d := f.delivery(t); d.Status != bgcheck.DeliveryFailed || d.AttemptCount != 2 || d.NextAttemptAt != nil || len(d.Attempts) != 2 {
				t.Fatalf("after the final attempt: %+v", d)
			}
		})
	}
	if len(targetGot()) != 0 {
		t.Fatal("a redirect was followed")
	}
}

func TestAnswerIsReadOnlyInPart(t *testing.T) {
	big := strings.Repeat("é", 1<<20) // 2 MiB of two-byte characters
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	f := newFixture(t, srv.URL)
	if _, err := f.acts(true).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1}); err != nil {
		t.Fatal(err)
	}
	snippet := *f.delivery(t).Attempts[0].ResponseSnippet
	if len(snippet) > 1024 || len(snippet) < 1022 || strings.ToValidUTF8(snippet, "?") != snippet {
		t.Fatalf("snippet of %d bytes, valid UTF-8 %v", len(snippet), strings.ToValidUTF8(snippet, "?") == snippet)
	}
}

// With private targets not allowed, the connection itself is refused for loopback addresses,
// whatever the stored URL says; nothing reaches the receiver.
func TestPrivateAddressBlockedAtConnect(t *testing.T) {
	srv, got := receiver(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, srv.URL)
	res, err := f.acts(false).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1, RetryAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != bgcheck.DeliveryPending || !strings.Contains(res.Error, "private, loopback or link-local") || len(got()) != 0 {
		t.Fatalf("result %+v, %d requests received", res, len(got()))
	}
}

// An IPv6 zone must not smuggle a loopback address past the connect-time check: a real server on
// [::1] is addressed through the zone of the loopback interface, and must never be reached.
func TestZonedLoopbackBlockedAtConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	var reached bool
	var mu sync.Mutex
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = true
		mu.Unlock()
		io.WriteString(w, "metadata secrets")
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	port := ln.Addr().(*net.TCPAddr).Port
	for _, zone := range []string{"lo", "1"} { // by interface name and by index
		url := fmt.Sprintf("http://[::1%%25%s]:%d/", zone, port)
		f := newFixture(t, url)
		res, err := f.acts(false).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1, RetryAfter: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := reached
		mu.Unlock()
		if got || res.Status != bgcheck.DeliveryPending || !strings.Contains(res.Error, "private, loopback or link-local") {
			t.Fatalf("%s: result %+v, server reached %v", url, res, got)
		}
		if d := f.delivery(t); d.Attempts[0].ResponseSnippet != nil {
			t.Fatalf("%s: the answer leaked into the attempt: %q", url, *d.Attempts[0].ResponseSnippet)
		}
	}
}

func TestDeletedOrDisabledEndpointCancels(t *testing.T) {
	for _, how := range []string{"deleted", "disabled"} {
		t.Run(how, func(t *testing.T) {
			srv, got := receiver(t, func(w http.ResponseWriter, r *http.Request) {})
			f := newFixture(t, srv.URL)
			ctx := context.Background()
			if how == "deleted" {
				if _, err := f.db.DeleteEndpoint(ctx, f.tenant, f.endpointID); err != nil {
					t.Fatal(err)
				}
			} else {
				off := false
				if _, err := f.db.UpdateEndpoint(ctx, f.tenant, f.endpointID, postgres.EndpointPatch{Enabled: &off}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := f.acts(true).DeliverWebhook(ctx, activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1})
			if err != nil || res.Status != bgcheck.DeliveryCanceled || len(got()) != 0 {
				t.Fatalf("result %+v %v, %d requests", res, err, len(got()))
			}
			if d := f.delivery(t); d.Status != bgcheck.DeliveryCanceled {
				t.Fatalf("delivery %s", d.Status)
			}
		})
	}
}

// Each attempt reads the endpoint afresh: a rotated secret signs the next attempt.
func TestRotatedSecretSignsTheNextAttempt(t *testing.T) {
	srv, got := receiver(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	f := newFixture(t, srv.URL)
	ctx := context.Background()
	if _, err := f.acts(true).DeliverWebhook(ctx, activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1, RetryAfter: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rotated := webhook.NewSecret()
	if _, err := f.db.RotateEndpointSecret(ctx, f.tenant, f.endpointID, rotated, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.acts(true).DeliverWebhook(ctx, activities.AttemptInput{DeliveryID: f.deliveryID, Number: 2, RetryAfter: time.Minute}); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if webhook.Verify(f.secret, reqs[0].body, reqs[0].header.Get("X-Service-Signature")) != nil ||
		webhook.Verify(rotated, reqs[1].body, reqs[1].header.Get("X-Service-Signature")) != nil ||
		webhook.Verify(f.secret, reqs[1].body, reqs[1].header.Get("X-Service-Signature")) == nil {
		t.Fatal("attempt 2 was not signed with the rotated secret only")
	}
	if string(reqs[0].body) != string(reqs[1].body) || reqs[1].header.Get("X-Service-Delivery-Attempt") != "2" {
		t.Fatal("the body changed between attempts, or the attempt number is wrong")
	}
}

// During a rotation's overlap every attempt is signed with both secrets, in both schemes: a
// receiver that knows only the new secret and one that knows only the old one both accept it.
// At the deadline the old secret stops signing.
func TestRotationOverlapSignsWithBothSecrets(t *testing.T) {
	srv, got := receiver(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	f := newFixture(t, srv.URL)
	ctx := context.Background()
	old := f.secret
	rotated := webhook.NewSecret()
	ep, err := f.db.RotateEndpointSecret(ctx, f.tenant, f.endpointID, rotated, 24*time.Hour)
	if err != nil || ep.PreviousSecretExpiresAt == nil || time.Until(*ep.PreviousSecretExpiresAt) < 23*time.Hour {
		t.Fatalf("rotated: %+v, %v", ep, err)
	}
	attempt := func(n int) {
		if _, err := f.acts(true).DeliverWebhook(ctx, activities.AttemptInput{DeliveryID: f.deliveryID, Number: n, RetryAfter: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	accepts := func(secret string, r received) bool {
		h := r.header
		return webhook.Verify(secret, r.body, h.Get(webhook.SignatureHeader)) == nil &&
			webhook.VerifyStandard(secret, r.body, h.Get(webhook.StandardIDHeader), h.Get(webhook.StandardTimestampHeader),
				h.Get(webhook.StandardSignatureHeader), 0, time.Now()) == nil
	}
	attempt(1)
	during := got()[0]
	if !accepts(rotated, during) || !accepts(old, during) || accepts(webhook.NewSecret(), during) {
		t.Fatalf("during the overlap: new %v, old %v; headers %v", accepts(rotated, during), accepts(old, during), during.header)
	}
	if n := len(strings.Fields(during.header.Get(webhook.StandardSignatureHeader))); n != 2 {
		t.Fatalf("webhook-signature holds %d signatures, want 2", n)
	}
	// The deadline passes.
	if _, err := f.db.Pool().Exec(ctx, `UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`,
		f.endpointID); err != nil {
		t.Fatal(err)
	}
	attempt(2)
	after := got()[1]
	if !accepts(rotated, after) || accepts(old, after) {
		t.Fatalf("after the deadline: new %v, old %v", accepts(rotated, after), accepts(old, after))
	}
}

func TestVanishedDeliveryEndsCanceled(t *testing.T) {
	f := newFixture(t, "https://example.com/hook")
	if _, err := f.db.Pool().Exec(context.Background(), `DELETE FROM accounts WHERE id = $1`, f.tenant.AccountID); err != nil {
		t.Fatal(err)
	}
	res, err := f.acts(true).DeliverWebhook(context.Background(), activities.AttemptInput{DeliveryID: f.deliveryID, Number: 1})
	if err != nil || res.Status != bgcheck.DeliveryCanceled {
		t.Fatalf("result %+v %v, want canceled", res, err)
	}
}
