package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck/tools/bench/internal/benchkit"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Groups of processes whose CPU is accounted apart.
const (
	groupTemporal = "temporal"
	groupAPI      = "api"
	groupWorker   = "worker"
	groupPGAPI    = "pg_api"    // backends of the API's pool
	groupPGWorker = "pg_worker" // backends of the workers' pools
	groupPGMisc   = "pg_misc"   // PostgreSQL's background processes, autovacuum, this program's backend
	groupBench    = "bench"     // this program: load generator and receiver
)

// meter accumulates the CPU time of each group from /proc (Linux; elsewhere it reads nothing).
// It reads every second as well as at each snapshot, so a process that exits between two
// snapshots loses at most a second, and a PostgreSQL backend that appears is found; a process
// born since the previous reading counts from zero.
type meter struct {
	db     *pgxpool.Pool
	dbName string
	rssPID int // the process whose resident memory snapshots report (the Temporal server)

	mu      sync.Mutex
	fixed   map[int]string
	last    map[int]procState
	total   map[string]time.Duration
	lastUp  uint64 // uptime at the previous reading, in clock ticks
	primed  bool
	readErr bool
}

type procState struct {
	group string
	cpu   time.Duration
	start uint64 // start time in clock ticks since boot, which tells a reused pid apart
}

func newMeter(db *pgxpool.Pool, dbName string) *meter {
	return &meter{db: db, dbName: dbName, fixed: map[int]string{}, last: map[int]procState{}, total: map[string]time.Duration{}}
}

func (m *meter) setProcess(pid int, group string) {
	m.mu.Lock()
	m.fixed[pid] = group
	m.mu.Unlock()
}

// start reads every second until the returned function is called.
func (m *meter) start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.read(ctx)
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.read(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// read adds what each process used since the previous reading to its group.
func (m *meter) read(ctx context.Context) {
	pids := m.postgresPIDs(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for pid, g := range m.fixed {
		pids[pid] = g
	}
	up, ok := uptimeTicks()
	if !ok {
		m.readErr = true
		return
	}
	for pid, g := range pids {
		cpu, start, ok := procStat(strconv.Itoa(pid))
		if !ok {
			continue // exited
		}
		prev, seen := m.last[pid]
		switch {
		case seen && prev.start == start:
			m.total[g] += cpu - prev.cpu
		case m.primed && start >= m.lastUp:
			m.total[g] += cpu // born since the previous reading
		}
		m.last[pid] = procState{group: g, cpu: cpu, start: start}
	}
	m.lastUp, m.primed = up, true
}

// postgresPIDs classifies the server's processes: the benchmark database's backends by
// application name, and the background processes; other databases' backends are other work.
func (m *meter) postgresPIDs(ctx context.Context) map[int]string {
	out := map[int]string{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := m.db.Query(ctx, `SELECT pid, coalesce(datname, ''), coalesce(application_name, ''), coalesce(backend_type, '')
		FROM pg_stat_activity`)
	if err != nil {
		return out
	}
	type proc struct {
		pid           int
		db, app, kind string
	}
	procs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (proc, error) {
		var p proc
		err := r.Scan(&p.pid, &p.db, &p.app, &p.kind)
		return p, err
	})
	if err != nil {
		return out
	}
	for _, p := range procs {
		switch {
		case p.db == m.dbName && p.app == appAPI:
			out[p.pid] = groupPGAPI
		case p.db == m.dbName && p.app == appWorker:
			out[p.pid] = groupPGWorker
		case p.db == m.dbName, p.db == "" && p.kind != "client backend":
			out[p.pid] = groupPGMisc
		}
	}
	return out
}

// cpuSnapshot is the accumulated CPU of each group and of the machine at one moment.
type cpuSnapshot struct {
	at                time.Time
	total             map[string]time.Duration
	hostBusy, hostAll uint64
	rssMB             float64
	ok                bool
}

func (m *meter) snapshot() cpuSnapshot {
	m.read(context.Background())
	m.mu.Lock()
	defer m.mu.Unlock()
	s := cpuSnapshot{at: time.Now(), total: make(map[string]time.Duration, len(m.total))}
	for g, d := range m.total {
		s.total[g] = d
	}
	var ok bool
	s.hostBusy, s.hostAll, ok = benchkit.HostCPU()
	s.ok = ok && !m.readErr
	s.rssMB = rssMB(m.rssPID)
	return s
}

// rssMB reads a process's resident memory from /proc/<pid>/status; 0 when unknown.
func rssMB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			if f := strings.Fields(v); len(f) > 0 { // "123456 kB"
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// cpuUse is the CPU used in a window, in cores (-1: unknown). Other is the machine's use minus
// every group's: work that is not the benchmark's, which disturbs it.
type cpuUse struct {
	WindowS  float64 `json:"window_s"`
	Temporal float64 `json:"temporal"`
	API      float64 `json:"api"`
	Worker   float64 `json:"worker"`
	PGAPI    float64 `json:"pg_api"`
	PGWorker float64 `json:"pg_worker"`
	PGMisc   float64 `json:"pg_misc"`
	Bench    float64 `json:"bench"`
	Host     float64 `json:"host"`
	Other    float64 `json:"other"`
	// TemporalRSSMB is the Temporal server's resident memory at the end of the window.
	TemporalRSSMB float64 `json:"temporal_rss_mb"`
}

func (a cpuSnapshot) until(b cpuSnapshot) cpuUse {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 || b.hostAll <= a.hostAll {
		return cpuUse{WindowS: wall, Temporal: -1, API: -1, Worker: -1, PGAPI: -1, PGWorker: -1, PGMisc: -1, Bench: -1, Host: -1, Other: -1}
	}
	c := func(g string) float64 { return (b.total[g] - a.total[g]).Seconds() / wall }
	u := cpuUse{
		WindowS: wall, Temporal: c(groupTemporal), API: c(groupAPI), Worker: c(groupWorker),
		PGAPI: c(groupPGAPI), PGWorker: c(groupPGWorker), PGMisc: c(groupPGMisc), Bench: c(groupBench),
		Host: float64(b.hostBusy-a.hostBusy) / float64(b.hostAll-a.hostAll) * float64(runtime.NumCPU()),
	}
	u.Other = max(0, u.Host-u.sum())
	u.TemporalRSSMB = b.rssMB
	return u
}

func (u cpuUse) sum() float64 {
	return u.Temporal + u.API + u.Worker + u.PGAPI + u.PGWorker + u.PGMisc + u.Bench
}

// clockTick is USER_HZ, 100 on every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

// procStat reads utime+stime and the start time of a process from /proc/<pid>/stat.
func procStat(pid string) (cpu time.Duration, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime, stime, starttime are 14, 15, 22
	if len(f) < 20 {
		return 0, 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	k, err2 := strconv.ParseUint(f[12], 10, 64)
	st, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return time.Duration(u+k) * clockTick, st, true
}

// uptimeTicks reads the time since boot, in clock ticks, from /proc/uptime.
func uptimeTicks() (uint64, bool) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0, false
	}
	sec, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	return uint64(sec * float64(time.Second/clockTick)), true
}
