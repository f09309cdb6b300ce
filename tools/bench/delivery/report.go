package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
)

// Targets the figures are held against (issue 17's).
const (
	targetIngestPerSec   = 2000
	targetIngestP99ms    = 50
	targetDeliveryPerSec = 200
)

// targetLatencyP99ms is the bound on the latency's p99 at an open-loop rate: 100 ms up to 50
// events/s, 250 ms up to 150/s; none above.
func targetLatencyP99ms(rate float64) (float64, bool) {
	switch {
	case rate <= 50:
		return 100, true
	case rate <= 150:
		return 250, true
	}
	return 0, false
}

// report is the output of a run.
type report struct {
	Benchmark  string   `json:"benchmark"`
	Temporal   string   `json:"temporal"`
	CPUs       int      `json:"cpus"`
	Workers    int      `json:"workers"`
	Endpoints  int      `json:"endpoints"`
	Clients    int      `json:"clients"`
	EventType  string   `json:"event_type"`
	APIEnv     []string `json:"api_env,omitempty"`
	WorkerEnv  []string `json:"worker_env,omitempty"`
	TemporalDC []string `json:"temporal_dynamic_config,omitempty"`
	DBParams   []string `json:"db_params,omitempty"`

	Ingest  *ingestResult `json:"ingest,omitempty"`
	Latency *rateResult   `json:"latency,omitempty"`
	Burst   *burstResult  `json:"burst,omitempty"`
	Steps   []rateResult  `json:"steps,omitempty"`
	// StepsSkipped says why the steps did not run.
	StepsSkipped string `json:"steps_skipped,omitempty"`
	// HighestSustainable is the highest of the latency phase's and the steps' rates that kept up.
	HighestSustainable *rateResult  `json:"highest_sustainable,omitempty"`
	Verify             verification `json:"verify"`
}

func newReport(o options) *report {
	mode := "memory"
	switch {
	case o.temporal == "postgres":
		mode = "cluster-postgres"
	case o.temporal == "server":
		mode = "server-sqlite"
	case o.temporal == "disk" || o.disk:
		mode = "sqlite-wal"
	}
	return &report{
		Benchmark: "delivery", Temporal: mode, CPUs: runtime.NumCPU(), Workers: o.workers, Endpoints: max(1, o.endpoints), Clients: o.clients,
		EventType: o.eventType, APIEnv: o.apiEnv, WorkerEnv: o.workerEnv, TemporalDC: o.temporalDC, DBParams: o.dbParams,
	}
}

func (r *report) highest() *rateResult {
	var best *rateResult
	for _, x := range append([]*rateResult{r.Latency}, ptrs(r.Steps)...) {
		if x != nil && x.Sustainable && (best == nil || x.Rate > best.Rate) {
			best = x
		}
	}
	return best
}

func ptrs(rs []rateResult) []*rateResult {
	out := make([]*rateResult, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

func meets(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func (r *report) printTable(w io.Writer) {
	r.HighestSustainable = r.highest()
	mode := map[string]string{
		"memory":           "Temporal dev server in memory",
		"sqlite-wal":       "Temporal dev server on disk (SQLite, WAL, synchronous=normal)",
		"server-sqlite":    "temporal-server on SQLite in memory (history and visibility apart)",
		"cluster-postgres": "temporal-server on PostgreSQL",
	}[r.Temporal]
	fmt.Fprintf(w, "\nDelivery benchmark: %s, %d worker process(es), %d endpoint(s) per event, %d CPUs shared by the API,\n", mode, r.Workers, r.Endpoints, r.CPUs)
	fmt.Fprintf(w, "Temporal, the worker(s), PostgreSQL and this program (load generator and receiver).\n")
	for _, x := range []struct {
		name string
		v    []string
	}{{"API env", r.APIEnv}, {"worker env", r.WorkerEnv}, {"Temporal dynamic config", r.TemporalDC}, {"PostgreSQL settings", r.DBParams}} {
		if len(x.v) > 0 {
			fmt.Fprintf(w, "%s: %s\n", x.name, strings.Join(x.v, " "))
		}
	}
	var cpuRows []cpuRow
	if x := r.Ingest; x != nil {
		fmt.Fprintf(w, "\n1. Ingest: %d clients POST /api/v1/events/test back to back for %gs (target >= %d/s with p99 <= %dms: %s)\n",
			x.Clients, x.DurationS, targetIngestPerSec, targetIngestP99ms,
			meets(x.EventsPerSec >= targetIngestPerSec && x.Post.P99ms <= targetIngestP99ms && x.Errors == 0))
		fmt.Fprintf(w, "Temporal held %d workflows before\n", x.PriorWorkflows)
		if x.Alone {
			fmt.Fprintf(w, "the workers were stopped meanwhile: the API and PostgreSQL had the machine\n")
		}
		tw := table(w)
		fmt.Fprintln(tw, "events/s\taccepted\terrors\tp50\tp90\tp99\tmax\tdelivered meanwhile\tbacklog drained in\t")
		fmt.Fprintf(tw, "%.0f\t%d\t%d\t%.1fms\t%.1fms\t%.1fms\t%.1fms\t%d\t%s\t\n", x.EventsPerSec, x.Accepted, x.Errors,
			x.Post.P50ms, x.Post.P90ms, x.Post.P99ms, x.Post.MaxMs, x.ArrivedInWindow, drainText(x.Drain))
		tw.Flush()
		if x.FirstError != "" {
			fmt.Fprintf(w, "first error: %s\n", x.FirstError)
		}
		cpuRows = append(cpuRows, cpuRow{"ingest", x.CPU})
	}
	if x := r.Latency; x != nil {
		target := "no target at this rate"
		if bound, ok := targetLatencyP99ms(x.Rate); ok {
			target = fmt.Sprintf("target p99 <= %gms: %s", bound, meets(x.Latency.P99ms <= bound && x.Arrived == x.Sent && x.Latency.N > 0))
		}
		fmt.Fprintf(w, "\n2. Latency at %g events/s, open loop for %gs (%s)\n", x.Rate, x.DurationS, target)
		fmt.Fprintf(w, "latency = the receiver's arrival time minus the time the POST was due and sent (generator lag at most %.1fms);\n", x.GenLagMaxMs)
		fmt.Fprintf(w, "Temporal held %d workflows before\n", x.PriorWorkflows)
		printRates(w, []rateResult{*x})
		printStages(w, x.Stages, x.Trace)
		cpuRows = append(cpuRows, cpuRow{fmt.Sprintf("latency %g/s", x.Rate), x.CPU})
	}
	if x := r.Burst; x != nil {
		fmt.Fprintf(w, "\n3. Sustained delivery: %d events enqueued by %d clients, the backlog drained (target >= %d/s: %s)\n",
			x.Events, r.Clients, targetDeliveryPerSec, meets(x.Middle80PerSec >= targetDeliveryPerSec))
		fmt.Fprintf(w, "Temporal held %d workflows before; rates from the first arrival to the last, between the 10th and the 90th percentile arrival,\n", x.PriorWorkflows)
		fmt.Fprintf(w, "from the end of the enqueue to the last arrival\n")
		tw := table(w)
		fmt.Fprintln(tw, "accepted\terrors\tenqueued in\tbacklog then\tarrived\tfirst to last\tdeliveries/s\tmiddle 80%\tafter enqueue\t")
		fmt.Fprintf(tw, "%d\t%d\t%.1fs\t%d\t%d\t%.1fs\t%.0f\t%.0f\t%.0f\t\n", x.Accepted, x.Errors, x.EnqueueS, x.BacklogAfterEnqueue,
			x.Arrived, x.FirstToLastS, x.PerSec, x.Middle80PerSec, x.AfterEnqueuePerSec)
		tw.Flush()
		fmt.Fprintf(w, "the dispatcher claimed the last delivery %.1fs after the first POST, when %d had arrived; %.0f/s arrived after that\n",
			x.LastClaimedS, x.ArrivedByThen, x.AfterClaimedPerSec)
		fmt.Fprintf(w, "arrivals per second: %s\n", intsText(x.PerSecond))
		cpuRows = append(cpuRows, cpuRow{"burst: enqueue", x.CPUEnqueue}, cpuRow{"burst: deliver", x.CPUDeliver})
	}
	if r.StepsSkipped != "" {
		fmt.Fprintf(w, "\n4. Rising rate: %s\n", r.StepsSkipped)
	}
	if len(r.Steps) > 0 {
		fmt.Fprintf(w, "\n4. Rising rate, open loop (sustainable: every event arrived within 5s of the last POST, p99 within the bound)\n")
		printRates(w, r.Steps)
		for _, x := range r.Steps {
			cpuRows = append(cpuRows, cpuRow{fmt.Sprintf("steps %g/s", x.Rate), x.CPU})
		}
		if h := r.HighestSustainable; h != nil {
			fmt.Fprintf(w, "highest sustainable rate: %g events/s, latency p50 %.0fms p99 %.0fms max %.0fms\n", h.Rate, h.Latency.P50ms, h.Latency.P99ms, h.Latency.MaxMs)
			if h != r.Latency {
				fmt.Fprintf(w, "at %g/s, ", h.Rate)
				printStages(w, h.Stages, h.Trace)
			}
		} else {
			fmt.Fprintf(w, "no rate tried was sustainable\n")
		}
	}
	if len(cpuRows) > 0 {
		fmt.Fprintf(w, "\nCPU in cores (pg_api, pg_worker: PostgreSQL backends of the API's and the workers' pools; pg_misc: PostgreSQL's\n")
		fmt.Fprintf(w, "background processes and autovacuum; bench: this program; other: the rest of the machine, a disturbance)\n")
		printCPU(w, cpuRows, "%.2f")
		for _, c := range cpuRows {
			if c.u.Other > 0.15 {
				fmt.Fprintf(w, "%s: other work on the machine took %.2f cores; its figures may be low\n", c.name, c.u.Other)
			}
		}
	}
	if x := r.Burst; x != nil && x.CPUPerDelivery.Host > 0 {
		fmt.Fprintf(w, "\nCPU milliseconds per delivery while the burst's backlog drained (after the enqueue):\n")
		printCPU(w, []cpuRow{{"per delivery", x.CPUPerDelivery}}, "%.2f")
	}
	r.printDB(w)
	r.printVerify(w)
	fmt.Fprintln(w)
}

type cpuRow struct {
	name string
	u    cpuUse
}

func printCPU(w io.Writer, rows []cpuRow, f string) {
	tw := table(w)
	fmt.Fprintln(tw, "window\tseconds\ttemporal\tapi\tworker\tpg_api\tpg_worker\tpg_misc\tbench\tother\thost\ttemporal RSS\t")
	v := func(c float64) string {
		if c < 0 {
			return "-"
		}
		return fmt.Sprintf(f, c)
	}
	for _, c := range rows {
		u := c.u
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0fMB\t\n", c.name, u.WindowS, v(u.Temporal), v(u.API), v(u.Worker),
			v(u.PGAPI), v(u.PGWorker), v(u.PGMisc), v(u.Bench), v(u.Other), v(u.Host), u.TemporalRSSMB)
	}
	tw.Flush()
}

func printRates(w io.Writer, rs []rateResult) {
	if len(rs) == 0 {
		return
	}
	tw := table(w)
	fmt.Fprintln(tw, "rate/s\tsent\taccepted\tarrived\tp50\tp90\tp99\tmax\tPOST p50\tPOST p99\tbacklog at end\tlast arrived after\tverdict\t")
	for _, x := range rs {
		fmt.Fprintf(tw, "%g\t%d\t%d\t%d\t%.0fms\t%.0fms\t%.0fms\t%.0fms\t%.1fms\t%.1fms\t%d\t%.2fs\t%s\t\n", x.Rate, x.Sent, x.Accepted, x.Arrived,
			x.Latency.P50ms, x.Latency.P90ms, x.Latency.P99ms, x.Latency.MaxMs, x.Post.P50ms, x.Post.P99ms, x.BacklogAtEnd, x.Drain.ArrivedS, x.Verdict)
	}
	tw.Flush()
	for _, x := range rs {
		if x.FirstError != "" {
			fmt.Fprintf(w, "%g/s: first error: %s\n", x.Rate, x.FirstError)
		}
	}
}

func printStages(w io.Writer, s stageStats, t traceStats) {
	fmt.Fprintln(w, "where the time went (from the database's timestamps):")
	tw := table(w)
	fmt.Fprintln(tw, "stage\tp50\tp90\tp99\tmax\t")
	for _, x := range []struct {
		name string
		l    latencyStats
	}{
		{"POST due -> created_at (API)", s.API},
		{"created_at -> claimed by the dispatcher", s.Dispatch},
		{"claimed -> attempt started (workflow start, task, local activity)", s.Start},
		{"attempt started -> received (signed POST)", s.Post},
		{"created_at -> received", s.FromCreated},
	} {
		fmt.Fprintf(tw, "%s\t%.1fms\t%.1fms\t%.1fms\t%.1fms\t\n", x.name, x.l.P50ms, x.l.P90ms, x.l.P99ms, x.l.MaxMs)
	}
	if t.Sampled > 0 {
		fmt.Fprintf(tw, "Temporal's part, from %d workflow histories:\t\t\t\t\t\n", t.Sampled)
		for _, x := range []struct {
			name string
			l    latencyStats
		}{
			{"claimed -> WorkflowExecutionStarted (start request)", t.StartRPC},
			{"WorkflowExecutionStarted -> WorkflowTaskStarted (to a worker)", t.ToWorker},
			{"WorkflowTaskStarted -> attempt started (in the worker)", t.InWorker},
			{"received -> WorkflowExecutionCompleted (record, complete)", t.Completion},
		} {
			fmt.Fprintf(tw, "%s\t%.1fms\t%.1fms\t%.1fms\t%.1fms\t\n", x.name, x.l.P50ms, x.l.P90ms, x.l.P99ms, x.l.MaxMs)
		}
	}
	tw.Flush()
	if len(t.Slowest) > 0 {
		fmt.Fprintln(w, "the slowest events, ms after their POST was due:")
		tw = table(w)
		fmt.Fprintln(tw, "event	created	claimed	workflow started	task started	attempt started	received	completed	tasks	first task	")
		for _, e := range t.Slowest {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%s\t\n", e.EventID, e.CreatedMs, e.ClaimedMs, e.StartedMs,
				e.TaskStartedMs, e.AttemptMs, e.ReceivedMs, e.CompletedMs, e.TaskAttempts, e.FirstTaskEnd)
		}
		tw.Flush()
	}
}

func (r *report) printDB(w io.Writer) {
	type row struct {
		name string
		d    dbUse
	}
	var rows []row
	if r.Ingest != nil {
		rows = append(rows, row{"ingest", r.Ingest.DB})
	}
	if r.Latency != nil {
		rows = append(rows, row{"latency", r.Latency.DB})
	}
	if r.Burst != nil {
		rows = append(rows, row{"burst", r.Burst.DB})
	}
	for _, s := range r.Steps {
		rows = append(rows, row{fmt.Sprintf("steps %g/s", s.Rate), s.DB})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPostgreSQL work per event, event to delivered (pg_stat_database, approximate; WAL is the whole server's)\n")
	tw := table(w)
	fmt.Fprintln(tw, "phase\tcommits\trows inserted\trows updated\tWAL bytes\t")
	for _, x := range rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.0f\t\n", x.name, x.d.CommitsPerEvent, x.d.InsertsPerEvent, x.d.UpdatesPerEvent, x.d.WALBytesPerEvent)
	}
	tw.Flush()
}

func (r *report) printVerify(w io.Writer) {
	v := r.Verify
	t := v.Receiver
	fmt.Fprintf(w, "\nVerification: %d deliveries of accepted events (one per event and endpoint), %d arrived, %d missing, %d duplicate copies, %d unannounced,\n",
		t.Accepted, t.Arrived, t.Missing, t.Duplicates, t.Unexpected)
	fmt.Fprintf(w, "%d requests with a retried attempt, %d with a bad signature; deliveries by status %v (%d retried); workflows %v\n",
		t.Retries, t.BadSig, v.Deliveries, v.Retried, v.Workflows)
	if len(v.HistoryEvents) > 0 {
		fmt.Fprintf(w, "history events per workflow (sample): %v; the first: %s\n", v.HistoryEvents, strings.Join(v.HistoryTypes, ", "))
	}
	if v.OK {
		fmt.Fprintln(w, "OK: every accepted event was delivered, no delivery failed")
	} else {
		fmt.Fprintf(w, "PROBLEM: %s\n", v.Problem)
	}
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func drainText(d drainResult) string {
	if !d.Complete {
		return "NOT drained"
	}
	return fmt.Sprintf("%.1fs", d.ArrivedS)
}

func intsText(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

func (r *report) printJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
