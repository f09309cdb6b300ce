package screening

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The documented test-mode SSNs (API.md §10). Integrators put one on a test candidate to get the
// outcome they want to exercise; any other SSN, or none, gives clear.
const (
	// SandboxSSNClear completes every screening clear.
	SandboxSSNClear = "111-11-2001"
	// SandboxSSNConsider completes the criminal screenings (national_criminal, county_criminal,
	// sex_offender) consider, each with one record; the other screenings come back clear.
	SandboxSSNConsider = "111-11-2002"
	// SandboxSSNSuspended suspends the ssn_trace, the screening every package has, as a real SSN
	// trace does when the number does not match the name: it waits for the candidate to correct
	// their data, and a new SSN then answers as that SSN would. Other screenings come back clear.
	SandboxSSNSuspended = "111-11-2003"
	// SandboxSSNFailed fails every screening, as when the provider gives up on a search.
	SandboxSSNFailed = "111-11-2004"
	// SandboxSSNNeverFinishes keeps every screening pending forever, so tests can exercise
	// cancellation and screening deadlines.
	SandboxSSNNeverFinishes = "111-11-2005"
)

// Reasons the sandbox gives for outcomes that are neither pending nor complete.
const (
	ReasonWaitingForCandidate = "waiting for the candidate"
	ReasonProviderFailed      = "the provider could not complete the search"
)

// DefaultSandboxSpeed runs sandbox screenings at real-world turnaround times, so a test-mode
// check in production takes as long as a live one would and integrators see realistic timing.
const DefaultSandboxSpeed = 1

// DevSandboxSpeed is the suggested speed for tests and make dev: a day becomes a second, so the
// slowest screening (a three-day county search) completes in three seconds.
const DevSandboxSpeed = 86400

// sandboxDelays are the real-world turnaround times the sandbox imitates at speed 1. A county
// search is slow because a court runner reads the county's records; verifications wait on a
// former employer or school answering.
//
//	ssn_trace                 1 minute
//	sex_offender              30 minutes
//	national_criminal         1 hour
//	motor_vehicle             2 hours
//	employment_verification   2 days
//	education_verification    2 days
//	county_criminal           3 days
var sandboxDelays = map[Type]time.Duration{
	TypeSSNTrace:               time.Minute,
	TypeSexOffender:            30 * time.Minute,
	TypeNationalCriminal:       time.Hour,
	TypeMotorVehicle:           2 * time.Hour,
	TypeEmploymentVerification: 48 * time.Hour,
	TypeEducationVerification:  48 * time.Hour,
	TypeCountyCriminal:         72 * time.Hour,
}

// Sandbox is the test-mode Provider. Like Checkr's staging environment it answers from
// documented candidate values (the SandboxSSN constants) instead of searching anything, and it
// keeps a screening pending for its type's turnaround time (see sandboxDelays: ssn_trace 1 min,
// sex_offender 30 min, national_criminal 1 h, motor_vehicle 2 h, employment and education
// verification 2 days, county_criminal 3 days), divided by the speed factor. Until
// SubmittedAt plus that delay the answer is pending with RetryAfter the time remaining, so the
// check workflow sleeps exactly as long as it would with a real provider.
type Sandbox struct {
	speed float64
}

var _ Provider = (*Sandbox)(nil)

// NewSandbox returns a sandbox whose delays are the real ones divided by speed: 1 is real time,
// DevSandboxSpeed makes a day a second. speed must be what ParseSpeed accepts; NewSandbox panics
// otherwise, because a zero, negative or non-finite factor would make every delay meaningless.
func NewSandbox(speed float64) *Sandbox {
	if !validSpeed(speed) {
		panic(fmt.Sprintf("screening: sandbox speed %v is not a positive finite number", speed))
	}
	return &Sandbox{speed: speed}
}

// ParseSpeed reads BGCHECK_SANDBOX_SPEED: a positive number such as "1" or "86400". An empty
// value means DefaultSandboxSpeed, so an unset variable gives production-realistic timing.
func ParseSpeed(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultSandboxSpeed, nil
	}
	speed, err := strconv.ParseFloat(s, 64)
	if err != nil || !validSpeed(speed) {
		return 0, fmt.Errorf("sandbox speed %q: want a positive number such as 1 or %d", s, DevSandboxSpeed)
	}
	return speed, nil
}

func validSpeed(speed float64) bool {
	return speed > 0 && !math.IsInf(speed, 0) && !math.IsNaN(speed)
}

// Screen answers from the candidate's SSN and the time elapsed since SubmittedAt; it keeps no
// state and reads no clock, so the same Request always gets the same Outcome.
func (s *Sandbox) Screen(ctx context.Context, req Request) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	base, ok := sandboxDelays[req.ScreeningType]
	if !ok {
		return Outcome{}, fmt.Errorf("%w: unknown screening type %q", ErrInvalidRequest, req.ScreeningType)
	}
	if req.SubmittedAt.IsZero() || req.Now.IsZero() {
		// A zero time would look like a screening submitted in year 1, complete at once: a
		// miswired caller would silently skip every delay.
		return Outcome{}, fmt.Errorf("%w: SubmittedAt and Now are both required", ErrInvalidRequest)
	}
	delay := time.Duration(float64(base) / s.speed)
	ssn := digits(req.Candidate.SSN)
	if ssn == digits(SandboxSSNNeverFinishes) {
		return Outcome{Status: StatusPending, RetryAfter: delay}, nil
	}
	// A Now before SubmittedAt (a caller passing times from different clocks) counts as no time
	// elapsed, so RetryAfter never exceeds the delay.
	if elapsed := max(req.Now.Sub(req.SubmittedAt), 0); elapsed < delay {
		return Outcome{Status: StatusPending, RetryAfter: delay - elapsed}, nil
	}
	return finished(ssn, req.ScreeningType), nil
}

// finished is the outcome once a screening's delay has passed.
func finished(ssn string, t Type) Outcome {
	switch ssn {
	case digits(SandboxSSNConsider):
		if r, ok := considerRecord(t); ok {
			return Outcome{Status: StatusComplete, Result: ResultConsider, Records: []Record{r}}
		}
	case digits(SandboxSSNSuspended):
		if t == TypeSSNTrace {
			return Outcome{Status: StatusSuspended, Reason: ReasonWaitingForCandidate}
		}
	case digits(SandboxSSNFailed):
		return Outcome{Status: StatusFailed, Reason: ReasonProviderFailed}
	}
	return Outcome{Status: StatusComplete, Result: ResultClear}
}

// considerRecord is the one record a criminal screening finds for SandboxSSNConsider. Each is a
// fresh value, so a caller editing its records cannot change the next answer.
func considerRecord(t Type) (Record, bool) {
	switch t {
	case TypeNationalCriminal:
		return Record{Description: "Petty theft", Classification: "misdemeanor", Disposition: "convicted",
			Jurisdiction: "Alameda County, CA", Date: "2019-03-14"}, true
	case TypeCountyCriminal:
		return Record{Description: "Driving under the influence", Classification: "misdemeanor",
			Disposition: "convicted", Jurisdiction: "Travis County, TX", Date: "2017-08-02"}, true
	case TypeSexOffender:
		return Record{Description: "Indecent exposure", Classification: "registered offender, tier I",
			Jurisdiction: "Ohio Sex Offender Registry", Date: "2015-11-20"}, true
	}
	return Record{}, false
}

// digits keeps only the digits of an SSN, so every common spelling of a number matches.
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
