package screening

import (
	"context"
	"errors"
	"time"
)

// Provider runs screenings for a check. It is stateless and deterministic on purpose: a Temporal
// workflow drives it from an activity, asking again after every pending answer, and the answer
// must depend only on the Request so that a retried or replayed activity sees the same thing.
//
// The workflow loop is: call Screen with SubmittedAt set to workflow.Now() at the first call and
// Now set to workflow.Now() at every call; while the Outcome is pending, workflow.Sleep for its
// RetryAfter and call again. Suspended waits for the candidate to correct their data (a signal),
// then calls again with the corrected Subject. Complete and failed are final.
//
// Screen returns an error only when asking again cannot help (ErrInvalidRequest) or when the
// provider could not be reached at all; a search the provider gave up on is an Outcome with
// StatusFailed, because that is an answer about the candidate's check, not a transport fault.
type Provider interface {
	Screen(ctx context.Context, req Request) (Outcome, error)
}

// Request asks a provider about one screening of one candidate. It carries both times so that
// the provider needs no memory and no clock of its own: time comes from the workflow, which
// keeps replays deterministic and lets tests pick any moment.
type Request struct {
	// ScreeningType is the search to run.
	ScreeningType Type `json:"screening_type"`
	// Candidate is who to search for.
	Candidate Subject `json:"candidate"`
	// SubmittedAt is when the screening was first requested: workflow.Now() at the first call,
	// passed unchanged on every later call. A provider measures its turnaround from it.
	SubmittedAt time.Time `json:"submitted_at"`
	// Now is workflow.Now() at this call, not the wall clock, so a replayed workflow asks the
	// same question it asked the first time.
	Now time.Time `json:"now"`
}

// Subject is what a provider needs to find a candidate's records. Fields are plain strings as
// the candidate gave them; providers normalise what they match on.
//
// The SSN travels in the workflow's history with the request, so a deployment that keeps
// history must protect it (a Temporal payload codec that encrypts).
type Subject struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	// DOB is the date of birth as YYYY-MM-DD.
	DOB string `json:"dob"`
	// SSN in any common spelling: "111-11-2001" and "111112001" are the same number.
	SSN string `json:"ssn"`
	// Address is the candidate's current address on one line.
	Address string `json:"address"`
}

// Outcome is a provider's answer about one screening at Request.Now.
type Outcome struct {
	Status Status `json:"status"`
	// Result is set only when Status is complete.
	Result Result `json:"result,omitempty"`
	// Records are what a complete screening found; a consider result has at least one.
	Records []Record `json:"records,omitempty"`
	// RetryAfter is set only when Status is pending: how long the workflow should sleep before
	// asking again. It is a duration rather than a time so that it means the same in any clock.
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Reason says why a screening is suspended or failed, in words fit for the employer.
	Reason string `json:"reason,omitempty"`
}

// ErrNoProvider is returned when a live-mode check needs a screening provider and none is
// configured. Live checks are refused rather than faked (API.md §10); the HTTP layer maps it to
// 422 no_provider.
var ErrNoProvider = errors.New("screening: no screening provider is configured for live mode")

// ErrInvalidRequest wraps the reason a Request can never be answered (an unknown screening type,
// a missing time). Retrying cannot help, so activities should fail non-retryably on it.
var ErrInvalidRequest = errors.New("screening: invalid request")
