package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck/webhook"
)

// receiver is the webhook endpoint: an HTTP server on 127.0.0.1 that answers 204 to everything and
// records, per event id (X-Service-Event-Id), when each copy arrived. It also keeps the set of
// events the API accepted, so that it can say at any moment how many of them have not arrived.
type receiver struct {
	url string
	srv *http.Server

	mu          sync.Mutex
	secret      string
	got         map[string][]time.Time // event id → arrival of each copy
	accepted    map[string]struct{}
	outstanding int // accepted events not arrived yet
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
		url:      "http://" + ln.Addr().String() + "/hook",
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

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

// ServeHTTP records the arrival time first, before reading the body, so that the time is when
// the request's headers came in.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get("X-Service-Event-Id")
	rc.mu.Lock()
	secret := rc.secret
	rc.mu.Unlock()
	sigOK := webhook.Verify(secret, body, r.Header.Get(webhook.SignatureHeader)) == nil

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
		prev := rc.got[id]
		rc.got[id] = append(prev, now)
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
	if len(rc.got[id]) == 0 {
		rc.outstanding++
	}
}

// pending is how many accepted events have not arrived.
func (rc *receiver) pending() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.outstanding
}

// arrivals returns the first arrival of each of ids that has arrived (zero time for the others).
func (rc *receiver) arrivals(ids []string) []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]time.Time, len(ids))
	for i, id := range ids {
		if t := rc.got[id]; len(t) > 0 {
			out[i] = t[0]
		}
	}
	return out
}

// arrivedBetween counts first arrivals of accepted events in [from, to).
func (rc *receiver) arrivedBetween(from, to time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for id, t := range rc.got {
		if _, ok := rc.accepted[id]; ok && !t[0].Before(from) && t[0].Before(to) {
			n++
		}
	}
	return n
}

// tally is the receiver's account of the whole run.
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
	t := tally{Accepted: len(rc.accepted), Requests: rc.total, BadSig: rc.badSig, NoID: rc.noID, Retries: rc.retries}
	for id := range rc.accepted {
		switch n := len(rc.got[id]); {
		case n == 0:
			t.Missing++
		default:
			t.Arrived++
			t.Duplicates += n - 1
		}
	}
	for id := range rc.got {
		if _, ok := rc.accepted[id]; !ok {
			t.Unexpected++ // a POST that failed on our side after the API committed it
		}
	}
	return t
}
