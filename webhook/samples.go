package webhook

import (
	"strings"
	"time"

	"github.com/google/uuid"
)

// SampleData returns example data for an event type, as test events carry when the caller gives
// none. check.completed carries check_id (a UUID), status and disposition, as the spec fixes; the
// other types' contents are the service's own choice.
func SampleData(eventType string) map[string]any {
	checkID := uuid.NewString()
	switch eventType {
	case EventCheckCreated:
		return map[string]any{"check_id": checkID, "status": "pending", "package": "standard"}
	case EventCheckCompleted:
		return map[string]any{"check_id": checkID, "status": "complete", "disposition": "clear"}
	case EventCheckFailed:
		return map[string]any{"check_id": checkID, "status": "failed", "reason": "the court records provider did not answer"}
	case EventReportReady:
		return map[string]any{"check_id": checkID, "report_id": uuid.NewString(), "status": "ready"}
	case EventAdverseActionCreated:
		return map[string]any{"adverse_action_id": uuid.NewString(), "check_id": checkID, "status": "pre_adverse"}
	case EventAdverseActionFinalized:
		return map[string]any{"adverse_action_id": uuid.NewString(), "check_id": checkID, "status": "final"}
	case EventDisputeFiled:
		return map[string]any{"dispute_id": uuid.NewString(), "check_id": checkID, "status": "open"}
	case EventDisputeResolved:
		return map[string]any{"dispute_id": uuid.NewString(), "check_id": checkID, "status": "resolved", "resolution": "corrected"}
	case EventCandidateUpdated:
		now := time.Now().UTC().Format(time.RFC3339)
		return map[string]any{
			"id": "cand_" + strings.ReplaceAll(uuid.NewString(), "-", ""), "mode": "test",
			"first_name": "Jane", "last_name": "Doe", "email": "jane@example.com", "phone": "+14155550100",
			"dob": "1990-02-03", "created_at": now, "updated_at": now,
		}
	}
	return map[string]any{}
}
