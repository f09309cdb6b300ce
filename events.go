package bgcheck

import (
	"encoding/json"
	"slices"
	"time"
)

// The event types of API.md §6, in the order the spec lists them. Package webhook, the wire
// format receivers import, names the same ones.
const (
	EventCheckCreated           = "check.created"
	EventCheckCompleted         = "check.completed"
	EventCheckFailed            = "check.failed"
	EventReportReady            = "report.ready"
	EventAdverseActionCreated   = "adverse_action.created"
	EventAdverseActionFinalized = "adverse_action.finalized"
	EventDisputeFiled           = "dispute.filed"
	EventDisputeResolved        = "dispute.resolved"
	EventCandidateUpdated       = "candidate.updated"
)

// EventTypes lists every event type, in the spec's order.
var EventTypes = []string{
	EventCheckCreated, EventCheckCompleted, EventCheckFailed, EventReportReady,
	EventAdverseActionCreated, EventAdverseActionFinalized, EventDisputeFiled,
	EventDisputeResolved, EventCandidateUpdated,
}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool { return slices.Contains(EventTypes, t) }

// EncodeEnvelope renders an event's envelope, {"id", "type", "created_at", "data"}, once: the
// bytes are stored with the event and sent unchanged on every attempt, so signatures and
// receivers' deduplication see the same body.
func EncodeEnvelope(id, eventType string, createdAt time.Time, data any) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt time.Time       `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}{id, eventType, createdAt.UTC(), raw})
}
