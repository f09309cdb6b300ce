// Package bgcheck holds the domain types every other package of the service shares: accounts,
// API keys, webhook endpoints, candidates, events, and the one error type whose codes the HTTP
// layer maps to problem+json answers (API.md §1).
package bgcheck

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Clients branch on it, so a code never changes
// meaning once published; the HTTP status for each lives in one table in package api.
type Code string

// The codes of API.md §1.
const (
	CodeMalformedJSON      Code = "malformed_json"
	CodeBodyTooLarge       Code = "body_too_large"
	CodeValidationFailed   Code = "validation_failed"
	CodeMissingAPIKey      Code = "missing_api_key"
	CodeInvalidAPIKey      Code = "invalid_api_key"
	CodeAPIKeyExpired      Code = "api_key_expired"
	CodeIPNotAllowed       Code = "ip_not_allowed"
	CodeInsufficientScope  Code = "insufficient_scope"
	CodeMissingToken       Code = "missing_token"
	CodeInvalidToken       Code = "invalid_token"
	CodeTokenExpired       Code = "token_expired"
	CodeForbidden          Code = "forbidden"
	CodeInvalidCredentials Code = "invalid_credentials"
	CodeRefreshTokenReused Code = "refresh_token_reused"
	CodeInvalidMagicLink   Code = "invalid_magic_link"
	CodeTestModeOnly       Code = "test_mode_only"
	CodeNotFound           Code = "not_found"
	CodeEmailTaken         Code = "email_taken"
	// CodeDeliveryInProgress refuses a redelivery while the delivery's attempts still run; API.md
	// leaves this case open.
	CodeDeliveryInProgress Code = "delivery_in_progress"
	CodeRateLimited        Code = "rate_limited"
	// CodeUnavailable is a request the service could not serve in time or right now (a
	// database past the request's deadline, every password-hashing slot busy); it is safe to
	// retry after the Retry-After the answer carries.
	CodeUnavailable Code = "service_unavailable"
	// CodeNoProvider refuses a live-mode check while no screening provider is configured: it is
	// never faked (API.md §10).
	CodeNoProvider Code = "no_provider"
	// CodeCheckFinished refuses to cancel or authorize a check that has already finished.
	CodeCheckFinished Code = "check_finished"
	// CodeCheckNotAdverse refuses an adverse action on a check that is not complete with the
	// assessment consider.
	CodeCheckNotAdverse Code = "check_not_adverse"
	// CodeAdverseActionOpen refuses a second adverse action while one is in its waiting period.
	CodeAdverseActionOpen Code = "adverse_action_open"
	// CodeAdverseActionClosed refuses to cancel an adverse action already finalized or canceled.
	CodeAdverseActionClosed Code = "adverse_action_closed"
	// CodeReportNotReady refuses a dispute of a check that has no report yet.
	CodeReportNotReady Code = "report_not_ready"
	// CodeDisputeOpen refuses a second open dispute of the same screening of a report.
	CodeDisputeOpen Code = "dispute_open"
	// CodeDisputeResolved refuses to resolve a dispute a second time.
	CodeDisputeResolved Code = "dispute_resolved"
	// CodeQuotaExceeded refuses a check over the account's monthly quota (402).
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeCardNumberRefused refuses a request that carries what looks like a full card number:
	// bgcheck holds only payment processors' references.
	CodeCardNumberRefused Code = "card_number_refused"
	// CodeIdempotencyKeyReused refuses an Idempotency-Key used before with another request.
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	// CodeIdempotencyKeyInUse is a repeat that waited in vain for the first request with its key.
	CodeIdempotencyKeyInUse Code = "idempotency_key_in_use"
	// CodeInvalidInvitation is an invitation link that is unknown or expired.
	CodeInvalidInvitation Code = "invalid_invitation"
	// CodeSSORequired refuses a password sign-in of an admin whose account requires single
	// sign-on; the detail names the way in.
	CodeSSORequired Code = "sso_required"
	// CodeSSOFailed is an answer of an identity provider, or a step of a sign-in through one,
	// that is refused: a bad signature, audience or nonce, an expired or replayed response, an
	// unknown state, an e-mail outside the connection's domains.
	CodeSSOFailed Code = "sso_failed"
	// CodeSSONotConfigured is an e-mail whose domain no enabled SSO connection owns.
	CodeSSONotConfigured Code = "sso_not_configured"
	// CodeDomainTaken refuses an e-mail domain another SSO connection already owns.
	CodeDomainTaken Code = "domain_taken"
	// CodeSSONotVerified refuses to require SSO before a sign-in through it has succeeded.
	CodeSSONotVerified Code = "sso_not_verified"
	// CodeSSOInUse refuses to disable or delete the last connection of an account that requires
	// SSO.
	CodeSSOInUse Code = "sso_in_use"
	// CodeSSOUnavailable: the connection cannot start a sign-in now (its identity provider did
	// not answer discovery, or its metadata expired); the caller's credentials are not at fault.
	CodeSSOUnavailable Code = "sso_unavailable"
	CodeInternal       Code = "internal"
)

// FieldError names one request field that failed validation and says why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the service's one error type. Detail is safe to show to the caller; anything that is
// not an *Error reaching the HTTP layer is reported as CodeInternal and only logged.
type Error struct {
	Code   Code
	Detail string
	Fields []FieldError
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Detail
}

// Errorf returns an *Error with the given code and a formatted, caller-safe detail.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// ErrNotFound is returned by storage when a record is absent, belongs to another account, or to
// the other mode: the three are indistinguishable to the caller on purpose.
var ErrNotFound = &Error{Code: CodeNotFound, Detail: "no such resource"}

// ValidationError reports one or more invalid fields as CodeValidationFailed.
func ValidationError(fields ...FieldError) *Error {
	return &Error{Code: CodeValidationFailed, Detail: "the request has invalid fields", Fields: fields}
}

// ErrorCode returns the code of err when it is (or wraps) an *Error, and CodeInternal otherwise.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
