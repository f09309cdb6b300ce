package main

import (
	"cmp"
	"context"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/bgcheck/bgcheck/workflows"
)

// traceStats split the Temporal part of a delivery, for a sample of a phase's events, by the
// times of its workflow's history events (the Temporal server's clock, which is this machine's).
type traceStats struct {
	Sampled int `json:"sampled"`
	// StartRPC: from the dispatcher's claim to WorkflowExecutionStarted: the start request,
	// including any wait for a free slot among the dispatcher's parallel starts.
	StartRPC latencyStats `json:"claim_to_workflow_started"`
	// ToWorker: from WorkflowExecutionStarted to WorkflowTaskStarted: the transfer queue, matching
	// and a worker's poll.
	ToWorker latencyStats `json:"workflow_started_to_task_started"`
	// InWorker: from WorkflowTaskStarted to the attempt's started_at: the worker runs the workflow
	// code, schedules the local activity, which loads the delivery.
	InWorker latencyStats `json:"task_started_to_attempt_started"`
	// Completion: from the receiver's arrival to WorkflowExecutionCompleted: recording the attempt
	// and completing the workflow task.
	Completion latencyStats `json:"received_to_workflow_completed"`
	// Slowest are the stages of the slowest events, in milliseconds, to explain the tail.
	Slowest []slowEvent `json:"slowest,omitempty"`
}

// slowEvent is one event's way through the pipeline, in milliseconds from its POST.
type slowEvent struct {
	EventID       string  `json:"event_id"`
	TotalMs       float64 `json:"total_ms"`
	CreatedMs     float64 `json:"created_ms"`
	ClaimedMs     float64 `json:"claimed_ms"`
	StartedMs     float64 `json:"workflow_started_ms"`
	TaskStartedMs float64 `json:"task_started_ms"`
	AttemptMs     float64 `json:"attempt_started_ms"`
	ReceivedMs    float64 `json:"received_ms"`
	CompletedMs   float64 `json:"workflow_completed_ms"`
	// TaskAttempts counts WorkflowTaskStarted events: more than one means a task failed or timed out.
	TaskAttempts int `json:"workflow_task_attempts"`
	// FirstTaskEnd says how the first of several workflow tasks ended: the event that closed it
	// (WorkflowTaskFailed with its cause, WorkflowTaskTimedOut with its timeout type).
	FirstTaskEnd string `json:"first_task_end,omitempty"`
}

// traceSlowest traces the n events that took longest to arrive.
func (b *bench) traceSlowest(ctx context.Context, sends []send, arrivals []time.Time, st map[string]stamps, n int) []slowEvent {
	idx := make([]int, 0, len(sends))
	for i := range sends {
		if !arrivals[i].IsZero() {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, c int) int { return cmp.Compare(arrivals[c].Sub(sends[c].at), arrivals[a].Sub(sends[a].at)) })
	var out []slowEvent
	for _, i := range idx[:min(n, len(idx))] {
		s, at := sends[i], sends[i].at
		ms := func(t time.Time) float64 {
			if t.IsZero() {
				return -1
			}
			return float64(t.Sub(at).Microseconds()) / 1000
		}
		e := slowEvent{EventID: s.id, TotalMs: ms(arrivals[i]), CreatedMs: ms(s.createdAt), ReceivedMs: ms(arrivals[i])}
		if ts, ok := st[s.id]; ok {
			e.ClaimedMs, e.AttemptMs = ms(ts.dispatched), ms(ts.started)
			if ev, tasks, firstEnd, err := b.historyTrace(ctx, workflows.WorkflowID(ts.deliveryID, ts.series)); err == nil {
				e.StartedMs = ms(ev[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED])
				e.TaskStartedMs = ms(ev[enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED])
				e.CompletedMs = ms(ev[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED])
				e.TaskAttempts = tasks
				if tasks > 1 {
					e.FirstTaskEnd = firstEnd
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// traceSample reads the histories of up to n of the given events' workflows, spread evenly.
func (b *bench) traceSample(ctx context.Context, sends []send, arrivals []time.Time, st map[string]stamps, n int) traceStats {
	var t traceStats
	if n <= 0 || len(sends) == 0 {
		return t
	}
	step := max(1, len(sends)/n)
	var startRPC, toWorker, inWorker, completion []time.Duration
	for i := 0; i < len(sends) && t.Sampled < n; i += step {
		s, ok := st[sends[i].id]
		if !ok || s.deliveryID == "" || arrivals[i].IsZero() || s.dispatched.IsZero() || s.started.IsZero() {
			continue
		}
		ev, err := b.historyTimes(ctx, workflows.WorkflowID(s.deliveryID, s.series))
		if err != nil {
			logf("trace %s: %v", s.deliveryID, err)
			continue
		}
		started, taskStarted, completed := ev[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED],
			ev[enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED], ev[enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED]
		if started.IsZero() || taskStarted.IsZero() || completed.IsZero() {
			continue
		}
		t.Sampled++
		startRPC = append(startRPC, started.Sub(s.dispatched))
		toWorker = append(toWorker, taskStarted.Sub(started))
		inWorker = append(inWorker, s.started.Sub(taskStarted))
		completion = append(completion, completed.Sub(arrivals[i]))
	}
	t.StartRPC, t.ToWorker, t.InWorker, t.Completion = statsOf(startRPC), statsOf(toWorker), statsOf(inWorker), statsOf(completion)
	return t
}

// historyTimes returns the time of the first event of each type in a workflow's history.
func (b *bench) historyTimes(ctx context.Context, workflowID string) (map[enumspb.EventType]time.Time, error) {
	out, _, _, err := b.historyTrace(ctx, workflowID)
	return out, err
}

// historyTrace returns the time of the first event of each type in a workflow's history, how many
// workflow tasks were started, and how the first one ended.
func (b *bench) historyTrace(ctx context.Context, workflowID string) (map[enumspb.EventType]time.Time, int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := map[enumspb.EventType]time.Time{}
	tasks, firstEnd := 0, ""
	iter := b.st.tc.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, 0, "", err
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			tasks++
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if firstEnd == "" {
				firstEnd = "failed: " + ev.GetWorkflowTaskFailedEventAttributes().GetCause().String()
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
			if firstEnd == "" {
				firstEnd = "timed out: " + ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String()
			}
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			if firstEnd == "" {
				firstEnd = "completed"
			}
		}
		if _, ok := out[ev.GetEventType()]; !ok {
			out[ev.GetEventType()] = ev.GetEventTime().AsTime()
		}
	}
	return out, tasks, firstEnd, nil
}
