// Package workflows holds bgcheck's Temporal workflows: deterministic orchestration only. The
// side effects (signing, POSTing, recording) live in package activities.
package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck"
)

// TaskQueue is the queue every delivery workflow and its activities run on.
const TaskQueue = "bgcheck-deliveries"

// Search attributes operators use to find a delivery in the Temporal UI. The dispatcher sets them
// all when it starts a workflow; the workflow keeps DeliveryStatus current.
var (
	EventIDKey        = temporal.NewSearchAttributeKeyKeyword("EventId")
	EventTypeKey      = temporal.NewSearchAttributeKeyKeyword("EventType")
	EndpointIDKey     = temporal.NewSearchAttributeKeyKeyword("EndpointId")
	AccountIDKey      = temporal.NewSearchAttributeKeyKeyword("AccountId")
	DeliveryStatusKey = temporal.NewSearchAttributeKeyKeyword("DeliveryStatus")
)

// Search attributes of a check's workflow (with AccountIDKey); the workflow keeps CheckStatus
// current.
var (
	CheckIDKey     = temporal.NewSearchAttributeKeyKeyword("CheckId")
	CandidateIDKey = temporal.NewSearchAttributeKeyKeyword("CandidateId")
	CheckStatusKey = temporal.NewSearchAttributeKeyKeyword("CheckStatus")
)

// SearchAttributes names every custom search attribute; all are Keyword. The Temporal server must
// have them registered (make dev and the tests do; see the README for a real cluster).
var SearchAttributes = []string{
	EventIDKey.GetName(), EventTypeKey.GetName(), EndpointIDKey.GetName(), AccountIDKey.GetName(), DeliveryStatusKey.GetName(),
	CheckIDKey.GetName(), CandidateIDKey.GetName(), CheckStatusKey.GetName(), AdverseActionStatusKey.GetName(), DisputeStatusKey.GetName(),
}

// DefaultRetrySchedule is the spec's wait after each failed attempt (API.md §6): six attempts.
var DefaultRetrySchedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 24 * time.Hour}

// DeliveryInput starts one attempt series of one delivery.
type DeliveryInput struct {
	DeliveryID string
	// FirstAttempt is the number of the series' first attempt: attempt numbers run on across
	// redeliveries.
	FirstAttempt int
	// Schedule is the wait after each failed attempt; the series has len(Schedule)+1 attempts.
	Schedule []time.Duration
	// Behaviour is the DeliveryWorkflow behaviour the starter asks for: 0 for the first one
	// (unbounded infrastructure retries, no deferrals), BehaviourCurrent for today's. Workflows
	// started before a change carry the older number and keep their behaviour on replay, with no
	// version marker in any history: GetVersion would add a marker and a search-attribute upsert
	// to every delivery.
	Behaviour int
}

// BehaviourCurrent is the DeliveryWorkflow behaviour new starts ask for: infrastructure retries
// bounded to a day, attempts deferred by in-flight limits and held by paused endpoints.
const BehaviourCurrent = 1

// DeliveryResult is how a series ended.
type DeliveryResult struct {
	Status   bgcheck.DeliveryStatus
	Attempts int
}

// WorkflowID derives a delivery's workflow id from its id and series, so starting the same series
// twice finds the first and starts nothing.
func WorkflowID(deliveryID string, series int) string {
	if series <= 1 {
		return deliveryID
	}
	return fmt.Sprintf("%s-r%d", deliveryID, series)
}
