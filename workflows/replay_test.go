package workflows_test

import (
	"log/slog"
	"testing"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/bgcheck/bgcheck/workflows"
)

// The history in testdata was recorded from a real delivery on the dev server (three attempts,
// two timers, the final search attribute; `go test ./test/e2e -run Retries -update-history` records it
// again). Replaying it fails if a change to DeliveryWorkflow alters the commands it issues for
// the same history: such a change needs workflow.GetVersion to keep running workflows safe.
func TestReplayRecordedDeliveryHistory(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflows.DeliveryWorkflow)
	logger := tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/delivery_history.json"); err != nil {
		t.Fatalf("the workflow no longer replays its recorded history: %v", err)
	}
}

// The check's history was recorded from a real check on the dev server (invitation, consent
// signal, two screenings with their sleeps, completion; `go test ./test/e2e -run
// TestACheckFromInvitationToReport -update-history` records it again).
func TestReplayRecordedCheckHistory(t *testing.T) {
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflow(workflows.CheckWorkflow)
	logger := tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/check_history.json"); err != nil {
		t.Fatalf("the workflow no longer replays its recorded history: %v", err)
	}
}
