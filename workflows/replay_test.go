package workflows_test

import (
	"log/slog"
	"testing"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/bgcheck/bgcheck/workflows"
)

// The histories in testdata were recorded from real runs on the dev server. Replaying one fails
// if a change to its workflow alters the commands it issues for the same history: such a change
// needs workflow.GetVersion to keep running workflows safe. The end-to-end tests record them
// again with -update-history:
//   - delivery: three attempts, two timers, the final search attribute, as the first release
//     ran it (its input has no Behaviour); and the same with today's behaviour
//     (delivery_history_behaviour1.json: `go test ./test/e2e -run Retries -update-history`);
//   - check: invitation, consent signal, two screenings with their sleeps, completion;
//   - adverse action: pre-adverse notice, a timer held by a dispute, released with a new end,
//     held again, then canceled;
//   - dispute: a timer, ended by the resolution's signal
//     (the last three: `go test ./test/e2e -run TestACheckFromInvitationToReport -update-history`).
func TestReplayRecordedHistories(t *testing.T) {
	for _, tc := range []struct {
		file     string
		workflow any
	}{
		{"delivery_history.json", workflows.DeliveryWorkflow},
		{"delivery_history_behaviour1.json", workflows.DeliveryWorkflow},
		{"check_history.json", workflows.CheckWorkflow},
		{"adverse_history.json", workflows.AdverseActionWorkflow},
		{"dispute_history.json", workflows.DisputeWorkflow},
	} {
		t.Run(tc.file, func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflow(tc.workflow)
			logger := tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))
			if err := replayer.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/"+tc.file); err != nil {
				t.Fatalf("the workflow no longer replays its recorded history: %v", err)
			}
		})
	}
}
