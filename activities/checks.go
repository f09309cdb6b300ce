package activities

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/screening"
)

// InvitationSender mails check invitations (package mail's senders).
type InvitationSender interface {
	SendInvitation(ctx context.Context, inv mail.Invitation) error
}

// Checks holds what a check's activities need. The screening provider of test mode is the
// sandbox; live mode has none until one is configured, and its checks are refused when created.
type Checks struct {
	DB        *postgres.DB
	Mailer    InvitationSender
	PortalURL string
	Sandbox   screening.Provider
	Live      screening.Provider // nil: no live provider
	Log       *slog.Logger
}

// ErrCheckGone is the error type of an activity whose check no longer exists (its account or
// candidate was deleted): retrying cannot help.
const ErrCheckGone = "CheckGone"

func (c *Checks) run(ctx context.Context, checkID string) (*postgres.CheckRun, error) {
	r, err := c.DB.FindCheckRun(ctx, checkID)
	if errors.Is(err, bgcheck.ErrNotFound) {
		return nil, temporal.NewNonRetryableApplicationError("the check no longer exists", ErrCheckGone, err)
	}
	return r, err
}

// SendInvitation mails the candidate a link into the consumer portal that signs them in to this
// check, valid until the check's invitation expires. Run again, it mails a fresh link; the old
// one keeps working until the same expiry. A check that no longer waits for consent gets none.
func (c *Checks) SendInvitation(ctx context.Context, checkID string) error {
	r, err := c.run(ctx, checkID)
	if err != nil || r.Status != bgcheck.CheckInvitationPending {
		return err
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	hash := sha256.Sum256([]byte(token))
	if err := c.DB.CreateInvitation(ctx, checkID, hash[:], r.InvitationExpiresAt); err != nil {
		return err
	}
	link := strings.TrimRight(c.PortalURL, "/") + "/invitation?token=" + token
	return c.Mailer.SendInvitation(ctx, mail.Invitation{
		To: r.Email, Name: r.FirstName + " " + r.LastName, Link: link, ExpiresAt: r.InvitationExpiresAt,
	})
}

// ScreeningInput asks about one screening of a check at the workflow's time Now; SubmittedAt is
// when the workflow first asked (see screening.Provider). It carries no personal data: the
// activity reads the candidate's details from the database, so the SSN never enters a
// workflow's history.
type ScreeningInput struct {
	CheckID     string
	Type        string
	SubmittedAt time.Time
	Now         time.Time
}

// ScreeningResult is what the workflow needs of a provider's answer; the records stay in the
// database.
type ScreeningResult struct {
	Status     screening.Status
	Result     screening.Result
	RetryAfter time.Duration
	Reason     string
}

// ErrNoProvider is the error type of a screening that has no provider (live mode).
const ErrNoProvider = "NoProvider"

// RunScreening asks the provider about one screening of a check and records the answer. A check
// that finished meanwhile (canceled) is answered canceled without asking.
func (c *Checks) RunScreening(ctx context.Context, in ScreeningInput) (ScreeningResult, error) {
	r, err := c.run(ctx, in.CheckID)
	if err != nil {
		return ScreeningResult{}, err
	}
	if r.Status.Finished() {
		return ScreeningResult{Status: screening.StatusCanceled}, nil
	}
	provider := c.Sandbox
	if r.Mode == bgcheck.ModeLive {
		provider = c.Live
	}
	if provider == nil {
		return ScreeningResult{}, temporal.NewNonRetryableApplicationError(screening.ErrNoProvider.Error(), ErrNoProvider, nil)
	}
	details, err := c.DB.CandidateDetailsOf(ctx, r.CandidateID)
	if err != nil && !errors.Is(err, bgcheck.ErrNotFound) {
		return ScreeningResult{}, err
	}
	out, err := provider.Screen(ctx, screening.Request{
		ScreeningType: screening.Type(in.Type), SubmittedAt: in.SubmittedAt, Now: in.Now,
		Candidate: screening.Subject{FirstName: r.FirstName, LastName: r.LastName, DOB: r.DOB, SSN: details.SSN, Address: details.Address},
	})
	if errors.Is(err, screening.ErrInvalidRequest) {
		return ScreeningResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidScreening", err)
	}
	if err != nil {
		return ScreeningResult{}, fmt.Errorf("screening %s of %s: %w", in.Type, in.CheckID, err)
	}
	records := []byte("[]")
	if len(out.Records) > 0 {
		if records, err = json.Marshal(out.Records); err != nil {
			return ScreeningResult{}, err
		}
	}
	if err := c.DB.RecordScreening(ctx, postgres.ScreeningUpdate{
		CheckID: in.CheckID, Type: in.Type, Status: string(out.Status), Result: string(out.Result), Records: records, Reason: out.Reason,
	}); err != nil {
		return ScreeningResult{}, err
	}
	return ScreeningResult{Status: out.Status, Result: out.Result, RetryAfter: out.RetryAfter, Reason: out.Reason}, nil
}

// SuspendInput suspends a check while a screening waits for the candidate.
type SuspendInput struct {
	CheckID string
	Reason  string
}

// SuspendCheck marks the check suspended until the candidate authorizes again with corrected
// details.
func (c *Checks) SuspendCheck(ctx context.Context, in SuspendInput) error {
	return c.DB.SuspendCheck(ctx, in.CheckID, in.Reason)
}

// CompleteCheck finishes a check whose screenings are complete: assessment, report, and the
// check.completed and report.ready events, in one transaction (idempotent).
func (c *Checks) CompleteCheck(ctx context.Context, checkID string) error {
	return c.DB.CompleteCheck(ctx, checkID)
}

// FinishInput ends a check short of completion.
type FinishInput struct {
	CheckID string
	Status  bgcheck.CheckStatus // failed or canceled
	Reason  string
}

// FinishCheck ends a check with status and reason and writes check.failed (idempotent: a check
// already finished, e.g. canceled through the API, is left as it is).
func (c *Checks) FinishCheck(ctx context.Context, in FinishInput) error {
	return c.DB.FailCheck(ctx, in.CheckID, in.Status, in.Reason)
}
