package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// send is one POST of an event.
type send struct {
	at        time.Time // when it was due (open loop) or started (closed loop)
	started   time.Time
	answered  time.Time
	id        string    // the event's id, when accepted
	createdAt time.Time // the envelope's created_at, when accepted
	err       string    // why it was not accepted
}

func (s send) ok() bool { return s.id != "" }

// poster sends test events to the API and tells the receiver which were accepted.
type poster struct {
	client *http.Client
	url    string
	key    string
	body   []byte
	rc     *receiver
}

func newPoster(st *stack) *poster {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, whatever HTTP_PROXY says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	body, _ := json.Marshal(map[string]string{"type": st.o.eventType})
	return &poster{
		client: &http.Client{Transport: tr, Timeout: st.o.timeout},
		url:    st.apiBase + "/api/v1/events/test",
		key:    st.key,
		body:   body,
		rc:     st.rc,
	}
}

func (p *poster) close() { p.client.CloseIdleConnections() }

// post sends one event; s.at must be set.
func (p *poster) post(ctx context.Context, s *send) {
	s.started = time.Now()
	defer func() { s.answered = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(p.body))
	if err != nil {
		s.err = err.Error()
		return
	}
	req.Header.Set("X-API-Key", p.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		s.err = err.Error()
		return
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		s.err = err.Error()
		return
	}
	var env struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"created_at"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &env) != nil || env.ID == "" {
		s.err = fmt.Sprintf("status %d: %.200s", resp.StatusCode, raw)
		return
	}
	s.id, s.createdAt = env.ID, env.CreatedAt
	p.rc.accept(env.ID)
}

// closedLoop runs clients that each POST back to back, starting no request at or after until and
// none beyond the limit-th (limit 0: no limit). It returns every send.
func (p *poster) closedLoop(ctx context.Context, clients int, until time.Time, limit int) []send {
	var (
		wg      sync.WaitGroup
		started atomic.Int64
		per     = make([][]send, clients)
	)
	for i := range clients {
		wg.Go(func() {
			out := make([]send, 0, 1024)
			for ctx.Err() == nil {
				now := time.Now()
				if !now.Before(until) {
					break
				}
				if limit > 0 && started.Add(1) > int64(limit) {
					break
				}
				s := send{at: now}
				p.post(ctx, &s)
				out = append(out, s)
			}
			per[i] = out
		})
	}
	wg.Wait()
	var all []send
	for _, s := range per {
		all = append(all, s...)
	}
	return all
}

// openLoop sends rate events per second for d, each at its scheduled time in its own goroutine,
// whether or not earlier ones have been answered; it returns when every POST has ended (each has
// the client's timeout). The first is due a few milliseconds from now.
func (p *poster) openLoop(ctx context.Context, rate float64, d time.Duration) (sends []send, lagMax time.Duration) {
	n := int(rate * d.Seconds())
	sends = make([]send, n)
	interval := time.Duration(float64(time.Second) / rate)
	t0 := time.Now().Add(20 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range n {
		at := t0.Add(time.Duration(i) * interval)
		if !sleepUntil(ctx, at) {
			sends = sends[:i]
			break
		}
		if lag := time.Since(at); lag > lagMax {
			lagMax = lag
		}
		wg.Go(func() {
			sends[i].at = at
			p.post(ctx, &sends[i])
		})
	}
	wg.Wait()
	return sends, lagMax
}

// sleepUntil waits for t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
