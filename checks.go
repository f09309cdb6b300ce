package bgcheck

import (
	"encoding/json"
	"strings"
	"time"
)

// Identifier prefixes of the background-check domain.
const (
	PrefixCheck  = "chk"
	PrefixReport = "rpt"
)

// CheckStatus is where a check is in its life (issue 12): waiting for the candidate's consent,
// running, or finished one way or another.
type CheckStatus string

// The statuses of a check.
const (
	CheckInvitationPending CheckStatus = "invitation_pending"
	CheckPending           CheckStatus = "pending"
	CheckComplete          CheckStatus = "complete"
	CheckSuspended         CheckStatus = "suspended"
	CheckCanceled          CheckStatus = "canceled"
	CheckFailed            CheckStatus = "failed"
	// CheckDispute is a complete check whose report the candidate disputes: it returns to
	// complete when the last open dispute is resolved.
	CheckDispute CheckStatus = "dispute"
)

// Valid reports whether s is a check status.
func (s CheckStatus) Valid() bool {
	switch s {
	case CheckInvitationPending, CheckPending, CheckComplete, CheckSuspended, CheckCanceled, CheckFailed, CheckDispute:
		return true
	}
	return false
}

// Finished reports whether a check has reached an end it never leaves.
func (s CheckStatus) Finished() bool {
	return s == CheckComplete || s == CheckCanceled || s == CheckFailed || s == CheckDispute
}

// Assessment is a complete check's verdict, the spec's disposition: clear, or consider (something
// was found that the employer must weigh).
type Assessment string

// The assessments.
const (
	AssessmentClear    Assessment = "clear"
	AssessmentConsider Assessment = "consider"
)

// Reasons a check ends without completing.
const (
	ReasonInvitationExpired  = "invitation_expired"
	ReasonCanceledByCustomer = "canceled_by_customer"
)

// Check is one background check of a candidate: a package of screenings run, after the
// candidate's consent, by a Temporal workflow. ID is the API's id (chk_…); CheckID, the same 128
// bits as a UUID, is the id its events carry.
type Check struct {
	ID          string           `json:"id" db:"id"`
	CheckID     string           `json:"check_id" db:"-"`
	AccountID   string           `json:"-" db:"account_id"`
	Mode        Mode             `json:"mode" db:"mode"`
	CandidateID string           `json:"candidate_id" db:"candidate_id"`
	Package     string           `json:"package" db:"package"`
	Status      CheckStatus      `json:"status" db:"status"`
	Assessment  *Assessment      `json:"assessment" db:"assessment"`
	Reason      *string          `json:"reason" db:"reason"`
	Screenings  []CheckScreening `json:"screenings" db:"-"`
	ReportID    *string          `json:"report_id" db:"report_id"`
	CreatedAt   time.Time        `json:"created_at" db:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at" db:"updated_at"`
	CompletedAt *time.Time       `json:"completed_at" db:"completed_at"`
	// InvitationExpiresAt is when the candidate's invitation lapses if they have not consented.
	InvitationExpiresAt time.Time `json:"invitation_expires_at" db:"invitation_expires_at"`
}

// CheckScreening is one screening of a check, as it stands.
type CheckScreening struct {
	Type        string     `json:"type" db:"type"`
	Status      string     `json:"status" db:"status"`
	Result      *string    `json:"result" db:"result"`
	Records     []byte     `json:"-" db:"records"`
	Reason      *string    `json:"reason" db:"reason"`
	CompletedAt *time.Time `json:"completed_at" db:"completed_at"`
}

// CheckUUID returns the UUID form of a check id (chk_<32 hex> → 8-4-4-4-12), the check_id that
// events carry; "" when id is not a check id.
func CheckUUID(id string) string {
	hex, ok := strings.CutPrefix(id, PrefixCheck+"_")
	if !ok || len(hex) != 32 {
		return ""
	}
	return hex[0:8] + "-" + hex[8:12] + "-" + hex[12:16] + "-" + hex[16:20] + "-" + hex[20:32]
}

// Report is a complete check's result as the employer and the candidate see it: the check's
// assessment and what each screening found.
type Report struct {
	ID          string          `json:"id" db:"id"`
	CheckID     string          `json:"check_id" db:"-"`
	Check       string          `json:"check" db:"check_id"`
	AccountID   string          `json:"-" db:"account_id"`
	Mode        Mode            `json:"mode" db:"mode"`
	CandidateID string          `json:"candidate_id" db:"candidate_id"`
	Package     string          `json:"package" db:"package"`
	Assessment  Assessment      `json:"assessment" db:"assessment"`
	Screenings  []ReportSection `json:"screenings" db:"-"`
	CreatedAt   time.Time       `json:"created_at" db:"created_at"`
	// Version counts the report's revisions: 1, then one more after each dispute that changed it.
	Version   int        `json:"version" db:"version"`
	RevisedAt *time.Time `json:"revised_at" db:"revised_at"`
}

// ReportSection is one screening in a report, with the records it found.
type ReportSection struct {
	Type    string          `json:"type"`
	Status  string          `json:"status"`
	Result  *string         `json:"result"`
	Records json.RawMessage `json:"records"`
}
