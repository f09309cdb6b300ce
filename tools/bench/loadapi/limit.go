package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/bgcheck/bgcheck/internal/dev/devstack"
	"github.com/bgcheck/bgcheck/ratelimit"
	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"
)

// limitCheck is the -limit-check run: o.concurrency clients send GET /api/v1/webhooks/endpoints
// with one API key, as fast as they can, to o.instances bgcheck-api processes (sharing their
// counters in Redis when there are several), for one window of the platform limit o.limit. It
// passes when exactly the limit of those requests got 200 and every other got 429, every answer
// carried the X-RateLimit-* headers and every 429 a Retry-After; then, once the window is over,
// one more request must pass.
//
// The clients stop a margin (a tenth of the window, at most 2 s) before the window ends, so that
// no request of the run lands in the next window however the server's and the client's clocks
// start; answers are grouped by X-RateLimit-Reset as well, which tells the windows apart anyway.
func limitCheck(ctx context.Context, o options, stdout io.Writer, work string, dev *devstack.Stack) error {
	rule, err := ratelimit.ParseRule(o.limit)
	if err != nil || rule.Off() {
		return fmt.Errorf("-limit: %q is not N/duration", o.limit)
	}
	if o.instances > 1 && o.redisURL == "" {
		return fmt.Errorf("-instances %d share their counters only in Redis: set -redis", o.instances)
	}
	var urls []string
	for i := range o.instances {
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return err
		}
		logPath := filepath.Join(work, fmt.Sprintf("api-%d.log", i+1))
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		env := append(dev.Environ(), "BGCHECK_HTTP_ADDR="+addr, "BGCHECK_LOG_LEVEL="+o.apiLogLevel,
			"BGCHECK_RATE_LIMIT_PLATFORM="+rule.String(), "BGCHECK_REDIS_URL="+o.redisURL)
		api, err := devstack.StartProcess(fmt.Sprintf("bgcheck-api %d", i+1), filepath.Join(work, "bgcheck-api"), nil, append(env, o.apiEnv...), logFile)
		if err != nil {
			return err
		}
		defer api.Stop(25 * time.Second)
		if err := api.WaitReady(ctx, "http://"+addr+"/healthz", nil); err != nil {
			return fmt.Errorf("%w\n%s", err, benchkit.Tail(logPath, 2000))
		}
		urls = append(urls, "http://"+addr+"/api/v1/webhooks/endpoints")
	}

	margin := min(rule.Window/10, 2*time.Second)
	logf("limit check: %d clients, one key, %d instance(s), platform limit %s, for %s", o.concurrency, o.instances, rule, rule.Window-margin)
	res := hammer(ctx, urls, dev.TestKey, o.concurrency, rule.Window-margin, o.timeout)
	if err := ctx.Err(); err != nil {
		return err
	}

	// The next window: one more request passes.
	last := slices.Max(res.resets)
	time.Sleep(time.Until(time.Unix(last, 0)))
	client := &http.Client{Timeout: o.timeout, Transport: &http.Transport{Proxy: nil}}
	status, _, err := call(ctx, client, http.MethodGet, urls[0], dev.TestKey, nil)
	if err != nil {
		return err
	}
	res.afterReset = status

	rep := limitReport{
		Benchmark: "loadapi-limit", Route: "GET /api/v1/webhooks/endpoints", Limit: rule.String(),
		Instances: o.instances, Redis: o.redisURL != "", Clients: o.concurrency,
		DurationS: (rule.Window - margin).Seconds(), Requests: res.requests, Passed: res.byStatus[200],
		Refused: res.byStatus[429], Other: res.requests - res.byStatus[200] - res.byStatus[429],
		Errors: res.errors, MissingHeaders: res.missingHeaders, RPS: float64(res.requests) / (rule.Window - margin).Seconds(),
		P50ms: ms(percentile(res.latencies, 0.50)), P99ms: ms(percentile(res.latencies, 0.99)),
		Windows: len(res.passedByReset), AfterReset: res.afterReset,
	}
	rep.Holds = rep.Passed == int(rule.Limit) && rep.Other == 0 && rep.Errors == 0 && rep.MissingHeaders == 0 &&
		rep.Windows == 1 && rep.AfterReset == http.StatusOK
	rep.print(stdout)
	if !rep.Holds {
		return fmt.Errorf("the limit did not hold: %d passed of %d, want exactly %d (first error: %s)", rep.Passed, rep.Requests, rule.Limit, res.firstErr)
	}
	return nil
}

// hammerResult is what the clients saw.
type hammerResult struct {
	requests, errors, missingHeaders int
	byStatus                         map[int]int
	passedByReset                    map[int64]int // X-RateLimit-Reset of each 200
	resets                           []int64
	latencies                        []time.Duration
	firstErr                         string
	afterReset                       int
}

// hammer runs the clients, each with its own keep-alive connection, spread over the URLs, until
// d has passed.
func hammer(ctx context.Context, urls []string, key string, clients int, d, timeout time.Duration) hammerResult {
	res := hammerResult{byStatus: map[int]int{}, passedByReset: map[int64]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var start sync.WaitGroup
	start.Add(1)
	var end time.Time
	for i := range clients {
		wg.Go(func() {
			client := &http.Client{Timeout: timeout, Transport: &http.Transport{
				Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, MaxIdleConnsPerHost: 1,
			}}
			defer client.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, urls[i%len(urls)], nil)
			req.Header.Set("X-API-Key", key)
			var mine hammerResult
			mine.byStatus = map[int]int{}
			mine.passedByReset = map[int64]int{}
			start.Wait()
			for time.Now().Before(end) && ctx.Err() == nil {
				begin := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					mine.requests++
					mine.errors++
					if mine.firstErr == "" {
						mine.firstErr = err.Error()
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine.latencies = append(mine.latencies, time.Since(begin))
				mine.requests++
				mine.byStatus[resp.StatusCode]++
				reset, err1 := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
				_, err2 := strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
				_, err3 := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
				retry, err4 := strconv.Atoi(resp.Header.Get("Retry-After"))
				if err1 != nil || err2 != nil || err3 != nil || (resp.StatusCode == http.StatusTooManyRequests && (err4 != nil || retry < 1)) {
					mine.missingHeaders++
				}
				if resp.StatusCode == http.StatusOK {
					mine.passedByReset[reset]++
				}
				if err1 == nil {
					mine.resets = append(mine.resets, reset)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.requests += mine.requests
			res.errors += mine.errors
			res.missingHeaders += mine.missingHeaders
			for s, n := range mine.byStatus {
				res.byStatus[s] += n
			}
			for r, n := range mine.passedByReset {
				res.passedByReset[r] += n
			}
			res.resets = append(res.resets, mine.resets...)
			res.latencies = append(res.latencies, mine.latencies...)
			if res.firstErr == "" {
				res.firstErr = mine.firstErr
			}
		})
	}
	end = time.Now().Add(d)
	start.Done()
	wg.Wait()
	slices.Sort(res.latencies)
	if len(res.resets) == 0 {
		res.resets = []int64{time.Now().Unix()}
	}
	return res
}

// limitReport is the output of a -limit-check run.
type limitReport struct {
	Benchmark      string  `json:"benchmark"`
	Route          string  `json:"route"`
	Limit          string  `json:"limit"`
	Instances      int     `json:"instances"`
	Redis          bool    `json:"redis"`
	Clients        int     `json:"clients"`
	DurationS      float64 `json:"duration_s"`
	Requests       int     `json:"requests"`
	Passed         int     `json:"passed"`
	Refused        int     `json:"refused"`
	Other          int     `json:"other"`
	Errors         int     `json:"errors"`
	MissingHeaders int     `json:"missing_headers"`
	RPS            float64 `json:"rps"`
	P50ms          float64 `json:"p50_ms"`
	P99ms          float64 `json:"p99_ms"`
	Windows        int     `json:"windows"`
	AfterReset     int     `json:"after_reset_status"`
	Holds          bool    `json:"holds"`
}

func (r limitReport) print(w io.Writer) {
	store := "memory"
	if r.Redis {
		store = "Redis"
	}
	fmt.Fprintf(w, "\n%s, platform limit %s, %d clients with one key, %d instance(s) counting in %s, %.1fs\n\n",
		r.Route, r.Limit, r.Clients, r.Instances, store, r.DurationS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "requests\t200\t429\tother\terrors\tno headers\treq/s\tp50\tp99\tafter reset\tholds\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.2fms\t%.2fms\t%d\t%v\t\n", r.Requests, r.Passed, r.Refused, r.Other,
		r.Errors, r.MissingHeaders, r.RPS, r.P50ms, r.P99ms, r.AfterReset, r.Holds)
	tw.Flush()
	fmt.Fprintln(w)
	b, _ := json.Marshal(r)
	fmt.Fprintf(w, "%s\n", b)
}
