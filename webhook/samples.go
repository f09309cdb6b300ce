package webhook

import (
	"encoding/hex"
	"time"

	"github.com/google/uuid"
)

// SampleData returns example data for an event type, as test events carry when the caller gives
// none: the shape the service's own events of that type have (Catalogue's schemas), with made-up
// ids. check.completed carries check_id (a UUID), status and disposition, as the spec fixes.
func SampleData(eventType string) map[string]any {
	u := uuid.Must(uuid.NewV7())
	checkID := u.String()
	hexID := func(prefix string) string {
		v := uuid.Must(uuid.NewV7())
		return prefix + "_" + hex.EncodeToString(v[:])
	}
	now := time.Now().UTC().Truncate(time.Second)
	switch eventType {
	case EventCheckCreated:
		return map[string]any{"check_id": checkID, "status": "invitation_pending", "candidate_id": hexID("cand"), "package": "standard"}
	case EventCheckCompleted:
		return map[string]any{"check_id": checkID, "status": "complete", "disposition": "clear"}
	case EventCheckFailed:
		return map[string]any{"check_id": checkID, "status": "failed", "reason": "vendor_unable_to_complete"}
	case EventReportReady:
		return map[string]any{"check_id": checkID, "report_id": hexID("rpt"), "candidate_id": hexID("cand")}
	case EventAdverseActionCreated:
		return map[string]any{"check_id": checkID, "adverse_action_id": hexID("aa"), "status": "pending",
			"finalize_at": now.AddDate(0, 0, 7).Format(time.RFC3339)}
	case EventAdverseActionFinalized:
		return map[string]any{"check_id": checkID, "adverse_action_id": hexID("aa"), "status": "finalized"}
	case EventDisputeFiled:
		return map[string]any{"check_id": checkID, "dispute_id": hexID("dsp"), "status": "open", "screening": "national_criminal",
			"due_at": now.AddDate(0, 0, 30).Format(time.RFC3339)}
	case EventDisputeResolved:
		return map[string]any{"check_id": checkID, "dispute_id": hexID("dsp"), "status": "resolved", "screening": "national_criminal",
			"resolution": "corrected"}
	case EventCandidateUpdated:
		ts := now.Format(time.RFC3339)
		return map[string]any{
			"id": hexID("cand"), "mode": "test", "first_name": "Jane", "last_name": "Doe", "email": "jane@example.com",
			"phone": "+14155550100", "dob": "1990-02-03", "created_at": ts, "updated_at": ts,
		}
	}
	return map[string]any{}
}
