package bgcheck

import "time"

// PrefixDispute starts a dispute's id.
const PrefixDispute = "dsp"

// DisputeStatus is where a dispute stands: under reinvestigation (open) or settled (resolved).
type DisputeStatus string

// The statuses of a dispute.
const (
	DisputeOpen     DisputeStatus = "open"
	DisputeResolved DisputeStatus = "resolved"
)

// Resolution is how a reinvestigation ended: the disputed item was inaccurate and is corrected,
// it was confirmed (verified), or it could not be verified and is deleted. A correction or a
// deletion removes the disputed screening's records from the report, which is revised.
type Resolution string

// The resolutions of a dispute.
const (
	ResolutionCorrected Resolution = "corrected"
	ResolutionVerified  Resolution = "verified"
	ResolutionDeleted   Resolution = "deleted"
)

// Valid reports whether r is a resolution.
func (r Resolution) Valid() bool {
	return r == ResolutionCorrected || r == ResolutionVerified || r == ResolutionDeleted
}

// RevisesReport reports whether a resolution changes the report.
func (r Resolution) RevisesReport() bool { return r != ResolutionVerified }

// Who resolved a dispute: a test-mode API call, an admin in the dashboard (test mode), the
// operator's CLI (the agency), or the 30-day deadline.
const (
	ResolvedByAPI      = "api"
	ResolvedByAdmin    = "admin"
	ResolvedByOperator = "operator"
	ResolvedByDeadline = "deadline"
)

// DisputePeriod is how long the agency has to reinvestigate a disputed item (FCRA §611(a)(1)):
// one left open that long is resolved as deleted.
const DisputePeriod = 30 * 24 * time.Hour

// DisputeWarningBefore is how long before a dispute's due date the account's admins are warned.
const DisputeWarningBefore = 5 * 24 * time.Hour

// Dispute is a candidate's challenge of one screening of their report. While any dispute of a
// check is open the check's status is dispute and an adverse action in its waiting period is
// held.
type Dispute struct {
	ID          string        `json:"id" db:"id"`
	Check       string        `json:"check" db:"check_id"`
	CheckID     string        `json:"check_id" db:"-"`
	AccountID   string        `json:"-" db:"account_id"`
	Mode        Mode          `json:"mode" db:"mode"`
	CandidateID string        `json:"candidate_id" db:"candidate_id"`
	Screening   string        `json:"screening" db:"screening"`
	Reason      string        `json:"reason" db:"reason"`
	Status      DisputeStatus `json:"status" db:"status"`
	FiledAt     time.Time     `json:"filed_at" db:"filed_at"`
	DueAt       time.Time     `json:"due_at" db:"due_at"`
	Resolution  *Resolution   `json:"resolution" db:"resolution"`
	Note        *string       `json:"note" db:"note"`
	ResolvedBy  *string       `json:"resolved_by" db:"resolved_by"`
	ResolvedAt  *time.Time    `json:"resolved_at" db:"resolved_at"`
}
