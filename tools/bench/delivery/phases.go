package main

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// bench runs the phases against a stack and fills the report.
type bench struct {
	o   options
	st  *stack
	rep *report
	p   *poster
}

// latencyStats are percentiles of a set of durations, in milliseconds.
type latencyStats struct {
	N     int     `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P90ms float64 `json:"p90_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

func statsOf(ds []time.Duration) latencyStats {
	s := slices.Clone(ds)
	slices.Sort(s)
	st := latencyStats{N: len(s)}
	if len(s) == 0 {
		return st
	}
	st.P50ms, st.P90ms, st.P99ms = ms(percentile(s, 0.50)), ms(percentile(s, 0.90)), ms(percentile(s, 0.99))
	st.MaxMs = ms(s[len(s)-1])
	return st
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// drainResult says how a phase's backlog emptied.
type drainResult struct {
	// ArrivedS is from the phase's last POST to the arrival of the last of its events.
	ArrivedS float64 `json:"arrived_s"`
	// Complete is false when -drain-timeout passed first: the next phase overlaps this one.
	Complete bool `json:"complete"`
	// SettledS is from the last arrival until the database had no pending delivery and Temporal
	// no running workflow.
	SettledS float64 `json:"settled_s"`
}

func (b *bench) runPhases(ctx context.Context) error {
	b.p = newPoster(b.st)
	defer b.p.close()
	if b.o.warmupEvents > 0 {
		logf("warm-up: %d events", b.o.warmupEvents)
		sends := b.p.closedLoop(ctx, 4, time.Now().Add(b.o.drainTimeout), b.o.warmupEvents)
		if n := accepted(sends); n == 0 {
			return fmt.Errorf("warm-up: the API accepted no event: %s", firstError(sends))
		}
		if d := b.drain(ctx, sends, time.Now()); !d.Complete {
			return fmt.Errorf("warm-up: the %d events were not delivered within %s; see the logs with -keep", b.o.warmupEvents, b.o.drainTimeout)
		}
	}
	for _, ph := range b.o.phases {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch ph {
		case "ingest":
			r := b.ingest(ctx)
			b.rep.Ingest = &r
		case "latency":
			logf("latency: %g events/s for %s, open loop", b.o.rate, b.o.latencyDur)
			r := b.atRate(ctx, b.o.rate, b.o.latencyDur, 300*time.Millisecond)
			b.rep.Latency = &r
		case "burst":
			r := b.burst(ctx)
			b.rep.Burst = &r
		case "steps":
			b.steps(ctx)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.rep.Verify = b.verify(ctx)
	return nil
}

// drain waits until every accepted event has arrived, then until the database has no pending
// delivery and Temporal no running workflow, within -drain-timeout in all.
func (b *bench) drain(ctx context.Context, sends []send, lastSend time.Time) drainResult {
	deadline := time.Now().Add(b.o.drainTimeout)
	var d drainResult
	for b.st.rc.pending() > 0 {
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(20*time.Millisecond)) {
			if ctx.Err() == nil {
				logf("  the backlog did not drain within %s: %d deliveries have not arrived", b.o.drainTimeout, b.st.rc.pending())
			}
			return d
		}
	}
	var last time.Time
	for _, t := range b.st.rc.arrivals(acceptedIDs(sends)) {
		if t.After(last) {
			last = t
		}
	}
	d.ArrivedS = max(0, last.Sub(lastSend).Seconds())
	for {
		pending, perr := b.st.pendingDeliveries(ctx)
		running, terr := b.st.runningWorkflows(ctx)
		if perr == nil && terr == nil && pending == 0 && running == 0 {
			break
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			if ctx.Err() != nil {
				return d
			}
			logf("  did not settle within %s: %d deliveries pending (%v), %d workflows running (%v)",
				b.o.drainTimeout, pending, perr, running, terr)
			return d
		}
	}
	d.Complete = true
	d.SettledS = max(0, time.Since(last).Seconds())
	return d
}

// ingestResult is what the API accepted with -c clients sending back to back.
type ingestResult struct {
	// PriorWorkflows is how many workflows Temporal held before the phase: its dev server gets
	// slower as they accumulate.
	PriorWorkflows int          `json:"prior_workflows"`
	Clients        int          `json:"clients"`
	DurationS      float64      `json:"duration_s"`
	Requests       int          `json:"requests"`
	Accepted       int          `json:"accepted"`
	Errors         int          `json:"errors"`
	EventsPerSec   float64      `json:"events_per_s"`
	Post           latencyStats `json:"post_latency"`
	// ArrivedInWindow counts deliveries that arrived during the measured window: the pipeline
	// ran meanwhile, on the same cores, unless Alone.
	ArrivedInWindow int `json:"arrived_in_window"`
	// Alone says the workers were stopped (SIGSTOP) while the API took the events, so the API
	// and PostgreSQL had the machine; the events waited in the outbox until the drain.
	Alone      bool        `json:"alone,omitempty"`
	FirstError string      `json:"first_error,omitempty"`
	CPU        cpuUse      `json:"cpu"`
	DB         dbUse       `json:"db"`
	Drain      drainResult `json:"drain"`
}

func (b *bench) ingest(ctx context.Context) ingestResult {
	o := b.o
	logf("ingest: %d clients, %s warm-up, %s measured", o.clients, o.ingestWarmup, o.ingestDur)
	prior := b.st.deliveryCount(ctx)
	db0 := b.st.dbStats(ctx)
	from := time.Now().Add(o.ingestWarmup)
	to := from.Add(o.ingestDur)
	if o.ingestAlone {
		b.st.signalWorkers(syscall.SIGSTOP)
	}
	var sends []send
	done := make(chan struct{})
	go func() { defer close(done); sends = b.p.closedLoop(ctx, o.clients, to, 0) }()
	sleepUntil(ctx, from)
	cpu0 := b.st.meter.snapshot()
	sleepUntil(ctx, to)
	cpu1 := b.st.meter.snapshot()
	<-done
	if o.ingestAlone {
		b.st.signalWorkers(syscall.SIGCONT)
	}
	r := ingestResult{PriorWorkflows: prior, Clients: o.clients, DurationS: o.ingestDur.Seconds(), CPU: cpu0.until(cpu1), Alone: o.ingestAlone}
	var lat []time.Duration
	for _, s := range sends {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		r.Requests++
		lat = append(lat, s.answered.Sub(s.started))
		if s.ok() {
			r.Accepted++
		} else {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = s.err
			}
		}
	}
	r.EventsPerSec = float64(r.Accepted) / o.ingestDur.Seconds()
	r.Post = statsOf(lat)
	r.ArrivedInWindow = b.st.rc.arrivedBetween(from, to)
	logf("  %.0f events/s accepted, POST p50 %.1fms p99 %.1fms; %d deliveries arrived meanwhile; draining %d",
		r.EventsPerSec, r.Post.P50ms, r.Post.P99ms, r.ArrivedInWindow, b.st.rc.pending())
	r.Drain = b.drain(ctx, sends, to)
	r.DB = b.st.dbStats(ctx).since(db0, accepted(sends))
	return r
}

// stageStats break an event's way to the receiver into stages, from the database's timestamps.
type stageStats struct {
	// API: from the POST (scheduled) to the event's created_at, stamped by the API before its
	// insert commits.
	API latencyStats `json:"api"`
	// Dispatch: from created_at to dispatched_at, the start of the dispatcher's claiming
	// transaction: the commit, the notification, the dispatcher waking.
	Dispatch latencyStats `json:"dispatch"`
	// Start: from dispatched_at to the first attempt's started_at: starting the workflow, the
	// workflow task reaching the worker, the local activity loading the delivery.
	Start latencyStats `json:"start"`
	// Post: from the attempt's started_at to the receiver's arrival time.
	Post latencyStats `json:"post"`
	// FromCreated: from created_at (the envelope's) to arrival, the other usual definition.
	FromCreated latencyStats `json:"from_created_at"`
}

// rateResult is one open-loop run at a fixed rate.
type rateResult struct {
	PriorWorkflows int     `json:"prior_workflows"`
	Rate           float64 `json:"rate"`
	DurationS      float64 `json:"duration_s"`
	Sent           int     `json:"sent"`
	Accepted       int     `json:"accepted"`
	Errors         int     `json:"errors"`
	Arrived        int     `json:"arrived"`
	// Latency is from the time the POST was due (it was sent then: GenLagMaxMs is the most the
	// generator fell behind) to the time the receiver got the event.
	Latency     latencyStats `json:"latency"`
	Post        latencyStats `json:"post_latency"`
	Stages      stageStats   `json:"stages"`
	Trace       traceStats   `json:"temporal_trace"`
	GenLagMaxMs float64      `json:"generator_lag_max_ms"`
	// BacklogAtEnd is how many accepted events had not arrived when the last POST was answered.
	BacklogAtEnd int    `json:"backlog_at_end"`
	Sustainable  bool   `json:"sustainable"`
	Verdict      string `json:"verdict"`
	FirstError   string `json:"first_error,omitempty"`
	// CPU is over the sending window.
	CPU   cpuUse      `json:"cpu"`
	DB    dbUse       `json:"db"`
	Drain drainResult `json:"drain"`
}

// atRate sends rate events per second for d, open loop, waits for them and measures how long
// each took. maxP99 is the bound a sustainable rate keeps.
func (b *bench) atRate(ctx context.Context, rate float64, d, maxP99 time.Duration) rateResult {
	prior := b.st.deliveryCount(ctx)
	db0 := b.st.dbStats(ctx)
	cpu0 := b.st.meter.snapshot()
	sends, lag := b.p.openLoop(ctx, rate, d)
	cpu1 := b.st.meter.snapshot()
	r := rateResult{PriorWorkflows: prior, Rate: rate, DurationS: d.Seconds(), Sent: len(sends), GenLagMaxMs: ms(lag), CPU: cpu0.until(cpu1),
		BacklogAtEnd: b.st.rc.pending()}
	var lastSend time.Time
	var post []time.Duration
	for _, s := range sends {
		post = append(post, s.answered.Sub(s.started))
		if s.at.After(lastSend) {
			lastSend = s.at
		}
		if s.ok() {
			r.Accepted++
		} else if r.Errors++; r.FirstError == "" {
			r.FirstError = s.err
		}
	}
	r.Post = statsOf(post)
	r.Drain = b.drain(ctx, sends, lastSend)
	if ctx.Err() != nil {
		return r
	}
	r.DB = b.st.dbStats(ctx).since(db0, r.Accepted)

	ids := acceptedIDs(sends)
	arrivals := b.st.rc.arrivals(ids)
	stamps := b.st.deliveryStamps(ctx, ids)
	var lat, api, dispatch, start, postStage, fromCreated []time.Duration
	okSends := acceptedSends(sends)
	// Latency is per delivery: with several endpoints, each copy of an event is one sample, and
	// an event counts as arrived when every copy has. The database's stage timestamps are one
	// delivery's per event.
	fanout := b.st.rc.fanout()
	firstCopies := make([]time.Time, len(okSends))
	for i, s := range okSends {
		firstCopies[i] = arrivals[i*fanout]
		api = append(api, s.createdAt.Sub(s.at))
		all := true
		for e := range fanout {
			at := arrivals[i*fanout+e]
			if at.IsZero() {
				all = false
				continue
			}
			lat = append(lat, at.Sub(s.at))
			fromCreated = append(fromCreated, at.Sub(s.createdAt))
			if ts, ok := stamps[s.id]; ok && e == 0 && !ts.dispatched.IsZero() && !ts.started.IsZero() {
				dispatch = append(dispatch, ts.dispatched.Sub(s.createdAt))
				start = append(start, ts.started.Sub(ts.dispatched))
				postStage = append(postStage, at.Sub(ts.started))
			}
		}
		if all {
			r.Arrived++
		}
	}
	r.Latency = statsOf(lat)
	r.Stages = stageStats{API: statsOf(api), Dispatch: statsOf(dispatch), Start: statsOf(start), Post: statsOf(postStage), FromCreated: statsOf(fromCreated)}
	if b.o.traceSample > 0 {
		r.Trace = b.traceSample(ctx, okSends, firstCopies, stamps, b.o.traceSample)
		r.Trace.Slowest = b.traceSlowest(ctx, okSends, arrivals, stamps, 3)
	}

	r.Sustainable = true
	switch {
	case r.Errors > 0:
		r.Sustainable, r.Verdict = false, fmt.Sprintf("%d POSTs failed", r.Errors)
	case r.Arrived < r.Accepted:
		r.Sustainable, r.Verdict = false, fmt.Sprintf("%d events did not arrive within -drain-timeout", r.Accepted-r.Arrived)
	case r.Drain.ArrivedS > 5:
		r.Sustainable, r.Verdict = false, fmt.Sprintf("the backlog grew: the last event arrived %.1fs after the last POST", r.Drain.ArrivedS)
	case r.Latency.P99ms > ms(maxP99):
		r.Sustainable, r.Verdict = false, fmt.Sprintf("p99 %.0fms is above %s", r.Latency.P99ms, maxP99)
	default:
		r.Verdict = fmt.Sprintf("kept up (p99 within %s)", maxP99)
	}
	logf("  %d/%d arrived; latency p50 %.0fms p99 %.0fms max %.0fms; %s",
		r.Arrived, r.Accepted, r.Latency.P50ms, r.Latency.P99ms, r.Latency.MaxMs, r.Verdict)
	return r
}

// steps raises the open-loop rate until a step is not sustainable.
func (b *bench) steps(ctx context.Context) {
	if b.rep.Latency != nil && !b.rep.Latency.Sustainable {
		b.rep.StepsSkipped = fmt.Sprintf("skipped: %g events/s was not sustainable already", b.o.rate)
		logf("steps: %s", b.rep.StepsSkipped)
		return
	}
	for _, rate := range b.o.steps {
		if ctx.Err() != nil {
			return
		}
		logf("steps: %g events/s for %s, open loop", rate, b.o.stepDur)
		r := b.atRate(ctx, rate, b.o.stepDur, b.o.stepMaxP99)
		b.rep.Steps = append(b.rep.Steps, r)
		if !r.Sustainable {
			return
		}
	}
}

// perDelivery turns cores over a window into CPU milliseconds per delivery.
func perDelivery(u cpuUse, n int) cpuUse {
	if u.Host < 0 {
		return u
	}
	f := func(c float64) float64 { return c * u.WindowS * 1000 / float64(n) }
	return cpuUse{WindowS: u.WindowS, Temporal: f(u.Temporal), API: f(u.API), Worker: f(u.Worker), PGAPI: f(u.PGAPI),
		PGWorker: f(u.PGWorker), PGMisc: f(u.PGMisc), Bench: f(u.Bench), Host: f(u.Host), Other: f(u.Other), TemporalRSSMB: u.TemporalRSSMB}
}

func accepted(sends []send) int {
	n := 0
	for _, s := range sends {
		if s.ok() {
			n++
		}
	}
	return n
}

func acceptedSends(sends []send) []send {
	out := make([]send, 0, len(sends))
	for _, s := range sends {
		if s.ok() {
			out = append(out, s)
		}
	}
	return out
}

func acceptedIDs(sends []send) []string {
	out := make([]string, 0, len(sends))
	for _, s := range sends {
		if s.ok() {
			out = append(out, s.id)
		}
	}
	return out
}

func firstError(sends []send) string {
	for _, s := range sends {
		if s.err != "" {
			return s.err
		}
	}
	return ""
}
