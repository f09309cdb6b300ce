package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
)

// ctxKey keys the request-scoped state below in a request's context.
type ctxKey int

const requestInfoKey ctxKey = 0

// requestInfo travels with each request: set up first, filled in by later middleware (the
// account, once a credential is verified), read by the access log when the request is done.
type requestInfo struct {
	id        string
	client    netip.Addr
	accountID string
	apiKey    *bgcheck.APIKey // set by requireAPIKey
	user      *auth.Claims    // set by requireBearer
	log       *slog.Logger
}

func infoOf(ctx context.Context) *requestInfo {
	if ri, ok := ctx.Value(requestInfoKey).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{log: slog.Default()}
}

func requestID(ctx context.Context) string      { return infoOf(ctx).id }
func clientAddr(ctx context.Context) netip.Addr { return infoOf(ctx).client }

// requestLogger returns the logger for r, carrying its request id (and account, once known).
func requestLogger(r *http.Request) *slog.Logger { return contextLogger(r.Context()) }

// contextLogger is requestLogger for code that holds the request's context, not the request.
func contextLogger(ctx context.Context) *slog.Logger {
	ri := infoOf(ctx)
	l := ri.log.With("request_id", ri.id)
	if ri.accountID != "" {
		l = l.With("account_id", ri.accountID)
	}
	return l
}

// newRequestID returns "req_" and 96 random bits in hex.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return bgcheck.PrefixRequest + "_" + hex.EncodeToString(b[:])
}
