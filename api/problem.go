package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/bgcheck/bgcheck"
)

// codeMethodNotAllowed answers a known path with the wrong method; API.md §1 leaves it open.
const codeMethodNotAllowed bgcheck.Code = "method_not_allowed"

// statusOf is the one table from error codes to HTTP statuses (API.md §1).
var statusOf = map[bgcheck.Code]int{
	bgcheck.CodeMalformedJSON:        http.StatusBadRequest,
	bgcheck.CodeBodyTooLarge:         http.StatusRequestEntityTooLarge,
	bgcheck.CodeValidationFailed:     http.StatusUnprocessableEntity,
	bgcheck.CodeMissingAPIKey:        http.StatusUnauthorized,
	bgcheck.CodeInvalidAPIKey:        http.StatusUnauthorized,
	bgcheck.CodeAPIKeyExpired:        http.StatusUnauthorized,
	bgcheck.CodeIPNotAllowed:         http.StatusForbidden,
	bgcheck.CodeInsufficientScope:    http.StatusForbidden,
	bgcheck.CodeMissingToken:         http.StatusUnauthorized,
	bgcheck.CodeInvalidToken:         http.StatusUnauthorized,
	bgcheck.CodeTokenExpired:         http.StatusUnauthorized,
	bgcheck.CodeForbidden:            http.StatusForbidden,
	bgcheck.CodeInvalidCredentials:   http.StatusUnauthorized,
	bgcheck.CodeRefreshTokenReused:   http.StatusUnauthorized,
	bgcheck.CodeInvalidMagicLink:     http.StatusUnauthorized,
	bgcheck.CodeTestModeOnly:         http.StatusForbidden,
	bgcheck.CodeNotFound:             http.StatusNotFound,
	bgcheck.CodeEmailTaken:           http.StatusConflict,
	bgcheck.CodeDeliveryInProgress:   http.StatusConflict,
	bgcheck.CodeRateLimited:          http.StatusTooManyRequests,
	bgcheck.CodeUnavailable:          http.StatusServiceUnavailable,
	bgcheck.CodeNoProvider:           http.StatusUnprocessableEntity,
	bgcheck.CodeCheckFinished:        http.StatusConflict,
	bgcheck.CodeInvalidInvitation:    http.StatusUnauthorized,
	bgcheck.CodeCheckNotAdverse:      http.StatusConflict,
	bgcheck.CodeAdverseActionOpen:    http.StatusConflict,
	bgcheck.CodeAdverseActionClosed:  http.StatusConflict,
	bgcheck.CodeReportNotReady:       http.StatusConflict,
	bgcheck.CodeDisputeOpen:          http.StatusConflict,
	bgcheck.CodeDisputeResolved:      http.StatusConflict,
	bgcheck.CodeQuotaExceeded:        http.StatusPaymentRequired,
	bgcheck.CodeCardNumberRefused:    http.StatusUnprocessableEntity,
	bgcheck.CodeIdempotencyKeyReused: http.StatusUnprocessableEntity,
	bgcheck.CodeIdempotencyKeyInUse:  http.StatusConflict,
	bgcheck.CodeSSORequired:          http.StatusForbidden,
	bgcheck.CodeSSOFailed:            http.StatusUnauthorized,
	bgcheck.CodeSSONotConfigured:     http.StatusNotFound,
	bgcheck.CodeDomainTaken:          http.StatusConflict,
	bgcheck.CodeSSONotVerified:       http.StatusConflict,
	bgcheck.CodeSSOInUse:             http.StatusConflict,
	bgcheck.CodeSSOUnavailable:       http.StatusBadGateway,
	bgcheck.CodeInternal:             http.StatusInternalServerError,
	codeMethodNotAllowed:             http.StatusMethodNotAllowed,
}

// problem is the RFC 9457 body of every error answer.
type problem struct {
	Type      string               `json:"type"`
	Title     string               `json:"title"`
	Status    int                  `json:"status"`
	Code      bgcheck.Code         `json:"code"`
	Detail    string               `json:"detail,omitempty"`
	RequestID string               `json:"request_id"`
	Errors    []bgcheck.FieldError `json:"errors,omitempty"`
}

// writeError answers with the problem+json form of err. Errors that are not *bgcheck.Error are
// internal: they are logged with the request id and the caller learns only that id.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *bgcheck.Error
	if !errors.As(err, &e) && errors.Is(err, context.DeadlineExceeded) {
		requestLogger(r).Warn("request deadline exceeded", "err", err)
		e = errRequestTimedOut
	}
	if e == nil {
		requestLogger(r).Error("internal error", "err", err)
		e = &bgcheck.Error{Code: bgcheck.CodeInternal, Detail: "an unexpected error occurred; quote the request id when reporting it"}
	}
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if e.Code == bgcheck.CodeUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	switch e.Code {
	case bgcheck.CodeMissingAPIKey, bgcheck.CodeInvalidAPIKey, bgcheck.CodeAPIKeyExpired:
		w.Header().Set("WWW-Authenticate", `APIKey realm="bgcheck", header="X-API-Key"`)
	case bgcheck.CodeMissingToken:
		w.Header().Set("WWW-Authenticate", `Bearer realm="bgcheck"`)
	case bgcheck.CodeInvalidToken, bgcheck.CodeTokenExpired, bgcheck.CodeRefreshTokenReused:
		w.Header().Set("WWW-Authenticate", `Bearer realm="bgcheck", error="invalid_token"`)
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		// Every 401 names a scheme (RFC 9110 §11.6.1): the portal's for sign-in failures.
		w.Header().Set("WWW-Authenticate", `Bearer realm="bgcheck"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem{
		Type:      "about:blank",
		Title:     http.StatusText(status),
		Status:    status,
		Code:      e.Code,
		Detail:    e.Detail,
		RequestID: requestID(r.Context()),
		Errors:    e.Fields,
	})
}

var errRequestTimedOut = &bgcheck.Error{Code: bgcheck.CodeUnavailable,
	Detail: "the request could not be completed in time; retry it"}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
