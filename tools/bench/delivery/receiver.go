package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
)

// receiver is the webhook endpoints: an HTTP server on 127.0.0.1 that answers 204 to everything
// and records, per delivery (the event id in X-Service-Event-Id and the endpoint, /hook/{i}),
// when each copy arrived. It also keeps the set of events the API accepted, so that it can say at
// any moment how many of their deliveries have not arrived.
type receiver struct {
	base string // the endpoints are base + "/hook/0", "/hook/1", …
	srv  *http.Server

	mu          sync.Mutex
	secrets     []string               // endpoint i's signing secret
	got         map[string][]time.Time // delivery key (event id and endpoint) → arrival of each copy
	accepted    map[string]struct{}
	outstanding int // deliveries of accepted events not arrived yet
	total       int // requests
	badSig      int
	noID        int
	retries     int // requests whose X-Service-Delivery-Attempt is not 1
}

func newReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{
		base:     "http://" + ln.Addr().String(),
		got:      make(map[string][]time.Time, 1<<15),
		accepted: make(map[string]struct{}, 1<<15),
	}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := rc.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("receiver: %v", err)
		}
	}()
	return rc, nil
}

func (rc *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = rc.srv.Shutdown(ctx)
}

// url is endpoint i's URL.
func (rc *receiver) url(i int) string { return rc.base + "/hook/" + strconv.Itoa(i) }

// addEndpoint records the secret of the next endpoint, whose URL is url(its index).
func (rc *receiver) addEndpoint(secret string) {
	rc.mu.Lock()
	rc.secrets = append(rc.secrets, secret)
	rc.mu.Unlock()
}

// fanout is how many endpoints, hence deliveries per event, there are.
func (rc *receiver) fanout() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return max(1, len(rc.secrets))
}

func deliveryKey(eventID string, endpoint int) string { return eventID + "/" + strconv.Itoa(endpoint) }

// ServeHTTP records the arrival time first, before reading the body, so that the time is when
// the request's headers came in.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("X-Service-Event-Id")
	endpoint, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hook/"))
	rc.mu.Lock()
	secret := ""
	if err == nil && endpoint >= 0 && endpoint < len(rc.secrets) {
		secret = rc.secrets[endpoint]
	}
	rc.mu.Unlock()
	sigOK := secret != "" && webhook.Verify(secret, body, r.Header.Get(webhook.SignatureHeader)) == nil

	rc.mu.Lock()
	rc.total++
	if !sigOK {
		rc.badSig++
	}
	if a := r.Header.Get("X-Service-Delivery-Attempt"); a != "1" {
		rc.retries++
	}
	if id == "" {
		rc.noID++
	} else {
		key := deliveryKey(id, endpoint)
		prev := rc.got[key]
		rc.got[key] = append(prev, now)
		if _, ok := rc.accepted[id]; ok && len(prev) == 0 {
			rc.outstanding--
		}
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// accept records that the API accepted an event; its delivery may already have arrived.
func (rc *receiver) accept(id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.accepted[id]; ok {
		return
	}
	rc.accepted[id] = struct{}{}
	for i := range max(1, len(rc.secrets)) {
		if len(rc.got[deliveryKey(id, i)]) == 0 {
			rc.outstanding++
		}
	}
}

// pending is how many deliveries of accepted events have not arrived.
func (rc *receiver) pending() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.outstanding
}

// arrivals returns the first arrival of each delivery of ids (zero time for those that have not
// arrived): fanout() entries per id, endpoint 0 first.
func (rc *receiver) arrivals(ids []string) []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := max(1, len(rc.secrets))
	out := make([]time.Time, len(ids)*n)
	for i, id := range ids {
		for e := range n {
			if t := rc.got[deliveryKey(id, e)]; len(t) > 0 {
				out[i*n+e] = t[0]
			}
		}
	}
	return out
}

// arrivedBetween counts first arrivals of deliveries of accepted events in [from, to).
func (rc *receiver) arrivedBetween(from, to time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for key, t := range rc.got {
		id, _, _ := strings.Cut(key, "/")
		if _, ok := rc.accepted[id]; ok && !t[0].Before(from) && t[0].Before(to) {
			n++
		}
	}
	return n
}

// tally is the receiver's account of the whole run, in deliveries (an event's copies to each
// endpoint); Unexpected counts deliveries of events the API never reported accepting.
type tally struct {
	Accepted   int `json:"accepted"`
	Arrived    int `json:"arrived"`
	Missing    int `json:"missing"`
	Duplicates int `json:"duplicate_copies"`
	Unexpected int `json:"unexpected_events"`
	Requests   int `json:"requests"`
	BadSig     int `json:"bad_signatures"`
	NoID       int `json:"without_event_id"`
	Retries    int `json:"retried_attempts"`
}

func (rc *receiver) tally() tally {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	fanout := max(1, len(rc.secrets))
	t := tally{Accepted: len(rc.accepted) * fanout, Requests: rc.total, BadSig: rc.badSig, NoID: rc.noID, Retries: rc.retries}
	for id := range rc.accepted {
		for e := range fanout {
			switch n := len(rc.got[deliveryKey(id, e)]); {
			case n == 0:
				t.Missing++
			default:
				t.Arrived++
				t.Duplicates += n - 1
			}
		}
	}
	for key := range rc.got {
		id, _, _ := strings.Cut(key, "/")
		if _, ok := rc.accepted[id]; !ok {
			t.Unexpected++ // a POST that failed on our side after the API committed it
		}
	}
	return t
}
