package workflows_test

import (
	"log/slog"
	"testing"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/bgcheck/bgcheck/workflows"
)

// The history in testdata was recorded from a real delivery on the dev server (three attempts,
// two timers, the final search attribute; `go test ./e2e -run Retries -update-history` records it
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
