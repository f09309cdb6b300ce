package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/workflows"
)

// pendingDeliveries counts deliveries not yet succeeded, failed or canceled.
func (st *stack) pendingDeliveries(ctx context.Context) (int, error) {
	var n int
	err := st.db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE status = 'pending'`).Scan(&n)
	return n, err
}

// deliveryCount counts every delivery so far: as many workflows as Temporal holds (none is
// deleted within the run).
func (st *stack) deliveryCount(ctx context.Context) int {
	var n int
	_ = st.db.QueryRow(ctx, `SELECT count(*) FROM deliveries`).Scan(&n)
	return n
}

// runningWorkflows counts open workflows, from Temporal's visibility store.
func (st *stack) runningWorkflows(ctx context.Context) (int64, error) {
	return st.countWorkflows(ctx, "ExecutionStatus = 'Running'")
}

func (st *stack) countWorkflows(ctx context.Context, query string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := st.tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: devtemporal.Namespace, Query: query,
	})
	if err != nil {
		return 0, err
	}
	return resp.GetCount(), nil
}

// stamps are the database's times of one event's way through the pipeline.
type stamps struct {
	deliveryID string
	series     int
	dispatched time.Time // the dispatcher's claiming transaction began
	started    time.Time // the first attempt began its POST
}

// deliveryStamps reads dispatched_at and the first attempt's started_at of the (one) delivery of
// each event.
func (st *stack) deliveryStamps(ctx context.Context, eventIDs []string) map[string]stamps {
	out := make(map[string]stamps, len(eventIDs))
	rows, err := st.db.Query(ctx, `
		SELECT d.event_id, d.id, d.series, d.dispatched_at, a.started_at
		FROM deliveries d LEFT JOIN delivery_attempts a ON a.delivery_id = d.id AND a.number = 1
		WHERE d.event_id = ANY($1)`, eventIDs)
	if err != nil {
		logf("read delivery times: %v", err)
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var s stamps
		var dispatched, started *time.Time
		if err := rows.Scan(&id, &s.deliveryID, &s.series, &dispatched, &started); err != nil {
			logf("read delivery times: %v", err)
			return out
		}
		if dispatched != nil {
			s.dispatched = *dispatched
		}
		if started != nil {
			s.started = *started
		}
		out[id] = s
	}
	return out
}

// dbCounters are cumulative statistics of the benchmark database (pg_stat_database). PostgreSQL
// publishes a backend's counts when its transaction ends, at most once a second, and an idle
// backend's within ten seconds, so a delta over a phase that has drained is close, not exact.
type dbCounters struct {
	commits, inserted, updated, deleted, walBytes int64
	ok                                            bool
}

func (st *stack) dbStats(ctx context.Context) dbCounters {
	var c dbCounters
	err := st.db.QueryRow(ctx, `
		SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&c.commits, &c.inserted, &c.updated, &c.deleted, &c.walBytes)
	c.ok = err == nil
	return c
}

// dbUse is the database work of a phase per event accepted in it (approximate; see dbCounters).
// WAL bytes are the whole server's, other databases' included.
type dbUse struct {
	CommitsPerEvent  float64 `json:"commits_per_event"`
	InsertsPerEvent  float64 `json:"rows_inserted_per_event"`
	UpdatesPerEvent  float64 `json:"rows_updated_per_event"`
	WALBytesPerEvent float64 `json:"wal_bytes_per_event"`
}

func (c dbCounters) since(before dbCounters, events int) dbUse {
	if !c.ok || !before.ok || events == 0 {
		return dbUse{}
	}
	per := func(a, b int64) float64 { return float64(a-b) / float64(events) }
	return dbUse{
		CommitsPerEvent: per(c.commits, before.commits), InsertsPerEvent: per(c.inserted, before.inserted),
		UpdatesPerEvent: per(c.updated, before.updated), WALBytesPerEvent: per(c.walBytes, before.walBytes),
	}
}

// verification is the check of the whole run.
type verification struct {
	OK       bool   `json:"ok"`
	Problem  string `json:"problem,omitempty"`
	Receiver tally  `json:"receiver"`
	// Deliveries counts the database's deliveries by status; Retried those with more than one
	// attempt.
	Deliveries map[string]int `json:"deliveries"`
	Retried    int            `json:"deliveries_retried"`
	// Workflows counts Temporal's workflows by status.
	Workflows map[string]int64 `json:"workflows"`
	// HistoryEvents is the length of a sample of delivery workflows' histories, and
	// HistoryTypes the event types of the first.
	HistoryEvents []int    `json:"history_events"`
	HistoryTypes  []string `json:"history_event_types"`
}

func (b *bench) verify(ctx context.Context) verification {
	st := b.st
	v := verification{Receiver: st.rc.tally(), Deliveries: map[string]int{}, Workflows: map[string]int64{}}
	var problems []string
	rows, err := st.db.Query(ctx, `SELECT status, count(*) FROM deliveries GROUP BY status`)
	if err == nil {
		err = collectCounts(rows, v.Deliveries)
	}
	if err == nil {
		err = st.db.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE attempt_count > 1`).Scan(&v.Retried)
	}
	if err != nil {
		problems = append(problems, "reading deliveries: "+err.Error())
	}
	for _, s := range []string{"Running", "Completed", "Failed", "TimedOut", "Terminated", "Canceled"} {
		n, err := st.countWorkflows(ctx, "ExecutionStatus = '"+s+"'")
		if err != nil {
			problems = append(problems, "counting workflows: "+err.Error())
			break
		}
		if n > 0 {
			v.Workflows[s] = n
		}
	}
	v.HistoryEvents, v.HistoryTypes, err = b.histories(ctx)
	if err != nil {
		problems = append(problems, "reading histories: "+err.Error())
	}

	t := v.Receiver
	if n := b.postErrors(); n > 0 {
		problems = append(problems, fmt.Sprintf("the API refused or failed %d POSTs (see each phase's first error)", n))
	}
	if t.Missing > 0 {
		problems = append(problems, fmt.Sprintf("%d deliveries of accepted events never arrived", t.Missing))
	}
	if t.BadSig > 0 {
		problems = append(problems, fmt.Sprintf("%d requests had a bad signature", t.BadSig))
	}
	for status, n := range v.Deliveries {
		if status != "succeeded" && n > 0 {
			problems = append(problems, fmt.Sprintf("%d deliveries are %s", n, status))
		}
	}
	if total := v.Deliveries["succeeded"]; total != t.Accepted+t.Unexpected {
		problems = append(problems, fmt.Sprintf("%d deliveries succeeded, but %d events were accepted and %d more arrived unannounced",
			total, t.Accepted, t.Unexpected))
	}
	for s, n := range v.Workflows {
		if s != "Completed" {
			problems = append(problems, fmt.Sprintf("%d workflows are %s", n, s))
		}
	}
	v.OK = len(problems) == 0
	v.Problem = strings.Join(problems, "; ")
	return v
}

// postErrors counts the POSTs of the phases that were not accepted.
func (b *bench) postErrors() int {
	r := b.rep
	n := 0
	if r.Ingest != nil {
		n += r.Ingest.Errors
	}
	if r.Latency != nil {
		n += r.Latency.Errors
	}
	if r.Burst != nil {
		n += r.Burst.Errors
	}
	for _, s := range r.Steps {
		n += s.Errors
	}
	return n
}

func collectCounts(rows pgx.Rows, into map[string]int) error {
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		into[k] = n
	}
	return rows.Err()
}

// histories reads the histories of a few delivery workflows of the run and returns their
// lengths, and the event types of the first.
func (b *bench) histories(ctx context.Context) ([]int, []string, error) {
	if b.o.historySample <= 0 {
		return nil, nil, nil
	}
	rows, err := b.st.db.Query(ctx, `SELECT id, series FROM deliveries ORDER BY random() LIMIT $1`, b.o.historySample)
	if err != nil {
		return nil, nil, err
	}
	type wf struct {
		id     string
		series int
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (wf, error) {
		var w wf
		return w, r.Scan(&w.id, &w.series)
	})
	if err != nil {
		return nil, nil, err
	}
	var lengths []int
	var types []string
	for i, w := range ids {
		iter := b.st.tc.GetWorkflowHistory(ctx, workflows.WorkflowID(w.id, w.series), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		n := 0
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return lengths, types, err
			}
			n++
			if i == 0 {
				types = append(types, strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"))
			}
		}
		lengths = append(lengths, n)
	}
	return lengths, types, nil
}
