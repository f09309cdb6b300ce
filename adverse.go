package bgcheck

import "time"

// PrefixAdverseAction starts an adverse action's id.
const PrefixAdverseAction = "aa"

// AdverseActionStatus is where an adverse action stands: the pre-adverse notice sent and the
// waiting period running (pending), the final notice sent (finalized), or withdrawn (canceled).
type AdverseActionStatus string

// The statuses of an adverse action.
const (
	AdverseActionPending   AdverseActionStatus = "pending"
	AdverseActionFinalized AdverseActionStatus = "finalized"
	AdverseActionCanceled  AdverseActionStatus = "canceled"
)

// MinWaitingDays is the least waiting period between the pre-adverse and the final notice: five
// business days, the period commonly held reasonable under FCRA §604(b)(3) and the least
// California's Fair Chance Act allows.
const MinWaitingDays = 5

// AdverseAction is an employer's decision against a candidate on a complete check whose
// assessment is consider, carried out as the FCRA requires: a pre-adverse notice with a copy of
// the report at once, then, after the waiting period, the final notice.
type AdverseAction struct {
	ID           string              `json:"id" db:"id"`
	Check        string              `json:"check" db:"check_id"`
	CheckID      string              `json:"check_id" db:"-"`
	AccountID    string              `json:"-" db:"account_id"`
	Mode         Mode                `json:"mode" db:"mode"`
	CandidateID  string              `json:"candidate_id" db:"candidate_id"`
	Status       AdverseActionStatus `json:"status" db:"status"`
	Reasons      []string            `json:"reasons" db:"reasons"`
	WaitingDays  int                 `json:"waiting_days" db:"waiting_days"`
	NoticeSentAt *time.Time          `json:"notice_sent_at" db:"notice_sent_at"`
	FinalizeAt   time.Time           `json:"finalize_at" db:"finalize_at"`
	// OnHold is true while a dispute of the check is open: the waiting period is paused, and
	// FinalizeAt moves out by the time it was held.
	OnHold      bool       `json:"on_hold" db:"on_hold"`
	FinalizedAt *time.Time `json:"finalized_at" db:"finalized_at"`
	CanceledAt  *time.Time `json:"canceled_at" db:"canceled_at"`
	CreatedAt   time.Time  `json:"created_at" db:"created_at"`
}

// AddBusinessDays returns t moved forward by n business days (Monday to Friday, in UTC): a
// notice sent on a Friday with 5 days to wait ends the next Friday, not on Wednesday. Public
// holidays are not counted out.
func AddBusinessDays(t time.Time, n int) time.Time {
	t = t.UTC()
	for n > 0 {
		t = t.AddDate(0, 0, 1)
		if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
			n--
		}
	}
	return t
}
