package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"
)

// target is one server under load.
type target struct {
	name   string
	url    string
	header http.Header
	pid    int // for its CPU use
	// dbPIDs lists the PostgreSQL backends serving the API, for their CPU use.
	dbPIDs func(context.Context) []int
}

// result is what one target scored in the measured window. Latencies are of every request
// started in the window, failed ones included.
type result struct {
	Target   string  `json:"target"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P90ms    float64 `json:"p90_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// CPU use in the window, in cores (-1 unknown): the server process, the PostgreSQL backends
	// of the API's pool, this program, the whole machine, and what is left: other work on the
	// machine, which skews the figures when it is more than a few hundredths.
	ServerCPU   float64 `json:"server_cores"`
	PostgresCPU float64 `json:"postgres_cores"`
	LoadgenCPU  float64 `json:"loadgen_cores"`
	HostCPU     float64 `json:"host_cores"`
	OtherCPU    float64 `json:"other_cores"`
	FirstError  string  `json:"first_error,omitempty"`
}

// worker holds one worker's records; only that worker writes them, so no request takes a lock.
type worker struct {
	latencies []time.Duration
	errors    int
	firstErr  string
	_         [64]byte // keep workers' hot fields off each other's cache lines
}

// runLoad sends GET requests from o.concurrency workers: for o.warmup unrecorded, then for
// o.duration recorded. Each worker stops starting requests when the window ends, and every
// request has o.timeout, so the run ends by itself.
func runLoad(ctx context.Context, t target, o options) (result, error) {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, whatever HTTP_PROXY says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * o.concurrency,
		MaxIdleConnsPerHost: 2 * o.concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: o.timeout}

	from := time.Now().Add(o.warmup)
	to := from.Add(o.duration)
	loadCtx, cancel := context.WithDeadline(ctx, to.Add(o.timeout))
	defer cancel()

	workers := make([]worker, o.concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { workers[i].run(loadCtx, client, t, from, to) })
	}
	sleepUntil(loadCtx, from)
	var dbPIDs []int
	if t.dbPIDs != nil {
		dbPIDs = t.dbPIDs(loadCtx) // after the warm-up, when the pool has grown
	}
	before := sampleCPU(t.pid, dbPIDs)
	sleepUntil(loadCtx, to)
	after := sampleCPU(t.pid, dbPIDs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	return summarize(t.name, workers, o.duration, before, after), nil
}

func (w *worker) run(ctx context.Context, client *http.Client, t target, from, to time.Time) {
	w.latencies = make([]time.Duration, 0, 1<<14)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		w.errors, w.firstErr = 1, err.Error()
		return
	}
	req.Header = t.header.Clone()
	for {
		begin := time.Now()
		if !begin.Before(to) || ctx.Err() != nil {
			return
		}
		// The request is reused: the client is done with it once the body is closed.
		resp, err := client.Do(req)
		status := 0
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		elapsed := time.Since(begin)
		if begin.Before(from) {
			continue // warm-up
		}
		w.latencies = append(w.latencies, elapsed)
		if err != nil || status != http.StatusOK {
			w.errors++
			if w.firstErr == "" {
				if err != nil {
					w.firstErr = err.Error()
				} else {
					w.firstErr = "status " + strconv.Itoa(status)
				}
			}
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func summarize(name string, workers []worker, window time.Duration, before, after cpuSample) result {
	n := 0
	for i := range workers {
		n += len(workers[i].latencies)
	}
	all := make([]time.Duration, 0, n)
	r := result{Target: name, Requests: n}
	for i := range workers {
		all = append(all, workers[i].latencies...)
		r.Errors += workers[i].errors
		if r.FirstError == "" {
			r.FirstError = workers[i].firstErr
		}
	}
	slices.Sort(all)
	r.RPS = float64(n) / window.Seconds()
	r.P50ms, r.P90ms, r.P99ms = ms(percentile(all, 0.50)), ms(percentile(all, 0.90)), ms(percentile(all, 0.99))
	if n > 0 {
		r.MaxMs = ms(all[n-1])
	}
	r.ServerCPU, r.PostgresCPU, r.LoadgenCPU, r.HostCPU = before.cores(after)
	r.OtherCPU = -1
	if r.HostCPU >= 0 {
		r.OtherCPU = max(0, r.HostCPU-r.ServerCPU-r.PostgresCPU-r.LoadgenCPU)
	}
	return r
}

// percentile is the nearest-rank percentile of sorted latencies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuSample is a reading of CPU time used so far (Linux /proc; ok false elsewhere).
type cpuSample struct {
	at                time.Time
	server, self      time.Duration
	db                map[int]time.Duration // by backend pid
	hostBusy, hostAll uint64                // clock ticks
	ok                bool
}

func sampleCPU(serverPID int, dbPIDs []int) cpuSample {
	s := cpuSample{at: time.Now(), db: make(map[int]time.Duration, len(dbPIDs))}
	var ok1, ok2, ok3 bool
	s.server, ok1 = procCPU(strconv.Itoa(serverPID))
	s.self, ok2 = procCPU("self")
	s.hostBusy, s.hostAll, ok3 = benchkit.HostCPU()
	for _, pid := range dbPIDs {
		if d, ok := procCPU(strconv.Itoa(pid)); ok {
			s.db[pid] = d
		}
	}
	s.ok = ok1 && ok2 && ok3
	return s
}

// cores returns the CPU use of the server, the PostgreSQL backends, this program and the machine
// between two samples, in cores; -1 when unknown.
func (s cpuSample) cores(later cpuSample) (server, db, self, host float64) {
	wall := later.at.Sub(s.at).Seconds()
	if !s.ok || !later.ok || wall <= 0 || later.hostAll <= s.hostAll {
		return -1, -1, -1, -1
	}
	var dbTime time.Duration
	for pid, d := range later.db {
		if d0, ok := s.db[pid]; ok {
			dbTime += d - d0
		}
	}
	server = (later.server - s.server).Seconds() / wall
	self = (later.self - s.self).Seconds() / wall
	host = float64(later.hostBusy-s.hostBusy) / float64(later.hostAll-s.hostAll) * float64(runtime.NumCPU())
	return server, dbTime.Seconds() / wall, self, host
}

// clockTick is USER_HZ, 100 on every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

// procCPU reads utime+stime of a process from /proc/<pid>/stat.
func procCPU(pid string) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime and stime are fields 14 and 15
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	k, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+k) * clockTick, true
}

// report is the output of a run.
type report struct {
	Benchmark    string   `json:"benchmark"`
	Route        string   `json:"route"`
	Concurrency  int      `json:"concurrency"`
	DurationS    float64  `json:"duration_s"`
	WarmupS      float64  `json:"warmup_s"`
	CPUs         int      `json:"cpus"`
	APILogLevel  string   `json:"api_log_level"`
	PoolMaxConns int      `json:"pool_max_conns,omitempty"`
	APIEnv       []string `json:"api_env,omitempty"`
	BodyBytes    int      `json:"body_bytes"`
	Results      []result `json:"results"`
}

func newReport(o options, bodyBytes int, results []result) report {
	return report{
		Benchmark: "loadapi", Route: "GET /api/v1/webhooks/endpoints",
		Concurrency: o.concurrency, DurationS: o.duration.Seconds(), WarmupS: o.warmup.Seconds(),
		CPUs: runtime.NumCPU(), APILogLevel: o.apiLogLevel, PoolMaxConns: o.poolMaxConns,
		APIEnv: o.apiEnv, BodyBytes: bodyBytes, Results: results,
	}
}

func (r report) printTable(w io.Writer) {
	pool := "default"
	if r.PoolMaxConns > 0 {
		pool = strconv.Itoa(r.PoolMaxConns)
	}
	fmt.Fprintf(w, "\n%s, %d workers, %gs warm-up + %gs measured per target, %d-byte body, API log level %s, pool_max_conns %s\n",
		r.Route, r.Concurrency, r.WarmupS, r.DurationS, r.BodyBytes, r.APILogLevel, pool)
	fmt.Fprintf(w, "%d CPUs shared by the client, the servers and PostgreSQL; cpu columns in cores\n\n", r.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\trequests\terrors\treq/s\tp50\tp90\tp99\tmax\tserver cpu\tpostgres cpu\tclient cpu\tother cpu\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2fms\t%.2fms\t%.2fms\t%.2fms\t%s\t%s\t%s\t%s\t\n",
			x.Target, x.Requests, x.Errors, x.RPS, x.P50ms, x.P90ms, x.P99ms, x.MaxMs,
			coresText(x.ServerCPU), coresText(x.PostgresCPU), coresText(x.LoadgenCPU), coresText(x.OtherCPU))
	}
	tw.Flush()
	for _, x := range r.Results {
		if x.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", x.Target, x.FirstError)
		}
		if x.OtherCPU > 0.15 {
			fmt.Fprintf(w, "%s: other work on the machine took %.2f cores during the window; its figures are low\n", x.Target, x.OtherCPU)
		}
	}
	fmt.Fprintln(w)
}

func coresText(c float64) string {
	if c < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", c)
}

func (r report) printJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
