package api

import (
	"net/http"

	"github.com/bgcheck/bgcheck"
)

// recordScope is whose records a request may see: an API key's account in the key's mode, or an
// admin's account in both modes, which a list narrows with ?mode=.
type recordScope struct {
	accountID string
	mode      bgcheck.Mode // "" for both
	admin     bool
}

// scopeOf returns the request's recordScope; for an admin it validates ?mode=.
func scopeOf(r *http.Request) (recordScope, error) {
	if k := apiKeyOf(r); k != nil {
		return recordScope{accountID: k.AccountID, mode: k.Mode}, nil
	}
	acct, err := adminAccount(r)
	if err != nil {
		return recordScope{}, err
	}
	mode := bgcheck.Mode(r.URL.Query().Get("mode"))
	if mode != "" && !mode.Valid() {
		return recordScope{}, bgcheck.ValidationError(bgcheck.FieldError{Field: "mode", Message: "must be test or live"})
	}
	return recordScope{accountID: acct, mode: mode, admin: true}, nil
}
