package api

import (
	"net/http"

	"github.com/bgcheck/bgcheck"
)

// settingsJSON is the account's settings the dashboard edits.
type settingsJSON struct {
	// AdverseActionWaitingDays is the waiting period, in business days, of an adverse action
	// created without waiting_days: 5 (the FCRA's usual least) to 30.
	AdverseActionWaitingDays int `json:"adverse_action_waiting_days"`
}

func (s *Server) handleAdminSettingsGet(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	days, err := s.db.AdverseWaitingDays(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsJSON{AdverseActionWaitingDays: days})
}

// handleAdminSettingsUpdate changes the account's settings; fields left out keep their value.
func (s *Server) handleAdminSettingsUpdate(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req struct {
		AdverseActionWaitingDays *int `json:"adverse_action_waiting_days"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if d := req.AdverseActionWaitingDays; d != nil {
		if *d < bgcheck.MinWaitingDays || *d > 30 {
			writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "adverse_action_waiting_days",
				Message: "must be between 5 and 30 business days"}))
			return
		}
		if err := s.db.SetAdverseWaitingDays(r.Context(), acct, *d); err != nil {
			writeError(w, r, err)
			return
		}
	}
	s.handleAdminSettingsGet(w, r)
}
