package main

import (
	"context"
	"slices"
	"time"
)

// burstResult is the receive rate while a large backlog drains.
type burstResult struct {
	PriorWorkflows int     `json:"prior_workflows"`
	Events         int     `json:"events"`
	Accepted       int     `json:"accepted"`
	Errors         int     `json:"errors"`
	EnqueueS       float64 `json:"enqueue_s"`
	// BacklogAfterEnqueue is how many accepted events had not arrived when the last was accepted.
	BacklogAfterEnqueue int     `json:"backlog_after_enqueue"`
	Arrived             int     `json:"arrived"`
	FirstToLastS        float64 `json:"first_to_last_s"`
	PerSec              float64 `json:"deliveries_per_s"`
	// Middle80PerSec is the rate between the 10th and the 90th percentile arrival.
	Middle80PerSec float64 `json:"middle80_deliveries_per_s"`
	// AfterEnqueuePerSec is the rate once the API no longer took events: delivery alone.
	AfterEnqueuePerSec float64 `json:"after_enqueue_deliveries_per_s"`
	// LastClaimedS is when the dispatcher claimed the last of the burst's deliveries to start its
	// workflow (from the first POST); ArrivedByThen how many had arrived by then, and
	// AfterClaimedPerSec the rate after it, when Temporal only ran workflows and started none.
	LastClaimedS       float64 `json:"last_claimed_s"`
	ArrivedByThen      int     `json:"arrived_by_last_claim"`
	AfterClaimedPerSec float64 `json:"after_last_claim_deliveries_per_s"`
	// PerSecond counts arrivals in each second from the first.
	PerSecond  []int  `json:"per_second"`
	FirstError string `json:"first_error,omitempty"`
	// CPUEnqueue is while the events were being POSTed (deliveries ran meanwhile); CPUDeliver
	// from then until the last arrived, and CPUPerDelivery that window's CPU per delivery, in ms.
	CPUEnqueue     cpuUse      `json:"cpu_enqueue"`
	CPUDeliver     cpuUse      `json:"cpu_deliver"`
	CPUPerDelivery cpuUse      `json:"cpu_ms_per_delivery"`
	DB             dbUse       `json:"db"`
	Drain          drainResult `json:"drain"`
}

func (b *bench) burst(ctx context.Context) burstResult {
	o := b.o
	logf("burst: %d events from %d clients, then the backlog drains", o.burst, o.clients)
	prior := b.st.deliveryCount(ctx)
	db0 := b.st.dbStats(ctx)
	cpu0 := b.st.meter.snapshot()
	start := time.Now()
	sends := b.p.closedLoop(ctx, o.clients, start.Add(o.drainTimeout), o.burst)
	enqueued := time.Now()
	cpu1 := b.st.meter.snapshot()
	r := burstResult{PriorWorkflows: prior, Events: o.burst, EnqueueS: enqueued.Sub(start).Seconds(), BacklogAfterEnqueue: b.st.rc.pending(), CPUEnqueue: cpu0.until(cpu1)}
	for _, s := range sends {
		if s.ok() {
			r.Accepted++
		} else if r.Errors++; r.FirstError == "" {
			r.FirstError = s.err
		}
	}
	logf("  %d accepted in %.1fs; %d waiting for delivery", r.Accepted, r.EnqueueS, r.BacklogAfterEnqueue)
	deadline := time.Now().Add(o.drainTimeout)
	for b.st.rc.pending() > 0 && time.Now().Before(deadline) && sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) {
	}
	cpu2 := b.st.meter.snapshot()
	r.CPUDeliver = cpu1.until(cpu2)
	r.Drain = b.drain(ctx, sends, enqueued)
	if ctx.Err() != nil {
		return r
	}
	r.DB = b.st.dbStats(ctx).since(db0, r.Accepted)

	var arrivals []time.Time
	for _, t := range b.st.rc.arrivals(acceptedIDs(sends)) {
		if !t.IsZero() {
			arrivals = append(arrivals, t)
		}
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	r.Arrived = len(arrivals)
	if n := len(arrivals); n >= 10 {
		first, last := arrivals[0], arrivals[n-1]
		r.FirstToLastS = last.Sub(first).Seconds()
		r.PerSec = float64(n-1) / r.FirstToLastS
		i10, i90 := n/10, n*9/10
		r.Middle80PerSec = float64(i90-i10) / arrivals[i90].Sub(arrivals[i10]).Seconds()
		after := 0
		for _, t := range arrivals {
			if t.After(enqueued) {
				after++
			}
		}
		if d := last.Sub(enqueued).Seconds(); d > 0 && after > 1 {
			r.AfterEnqueuePerSec = float64(after) / d
			r.CPUPerDelivery = perDelivery(r.CPUDeliver, after)
		}
		var lastClaim time.Time
		for _, s := range b.st.deliveryStamps(ctx, acceptedIDs(sends)) {
			if s.dispatched.After(lastClaim) {
				lastClaim = s.dispatched
			}
		}
		if !lastClaim.IsZero() {
			r.LastClaimedS = lastClaim.Sub(start).Seconds()
			for _, t := range arrivals {
				if !t.After(lastClaim) {
					r.ArrivedByThen++
				}
			}
			if d := last.Sub(lastClaim).Seconds(); d > 1 {
				r.AfterClaimedPerSec = float64(n-r.ArrivedByThen) / d
			}
		}
		r.PerSecond = make([]int, int(r.FirstToLastS)+1)
		for _, t := range arrivals {
			r.PerSecond[int(t.Sub(first).Seconds())]++
		}
	}
	logf("  %d arrived: %.0f/s first to last, %.0f/s middle 80%%, %.0f/s after the enqueue; last claimed after %.1fs, %.0f/s after that",
		r.Arrived, r.PerSec, r.Middle80PerSec, r.AfterEnqueuePerSec, r.LastClaimedS, r.AfterClaimedPerSec)
	return r
}
