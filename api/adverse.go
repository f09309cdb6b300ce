package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
)

func (s *Server) adverseActionRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeChecksRead), requireScope(bgcheck.ScopeChecksWrite)
	r.With(read).Get("/", s.handleAdverseActionList)
	r.With(read).Get("/{adverseActionID}", s.handleAdverseActionGet)
	r.With(write).Post("/{adverseActionID}/cancel", s.handleAdverseActionCancel)
}

type adverseActionRequest struct {
	Reasons     []string `json:"reasons"`
	WaitingDays *int     `json:"waiting_days"`
}

// handleAdverseActionCreate starts an adverse action on a complete check whose assessment is
// consider: the pre-adverse notice goes to the candidate at once, the final one after
// waiting_days business days (default: the account's, 5 unless an admin set more; least: 5).
func (s *Server) handleAdverseActionCreate(w http.ResponseWriter, r *http.Request) {
	checkID, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req adverseActionRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if len(req.Reasons) == 0 || len(req.Reasons) > 10 {
		v.add("reasons", "must list between 1 and 10 reasons")
	}
	for _, reason := range req.Reasons {
		if strings.TrimSpace(reason) == "" || len(reason) > 300 {
			v.add("reasons", "each reason must be between 1 and 300 characters")
			break
		}
	}
	days := 0 // the account's default (5 business days unless an admin set more)
	if req.WaitingDays != nil {
		days = *req.WaitingDays
		if days < bgcheck.MinWaitingDays || days > 30 {
			v.add("waiting_days", "must be between 5 and 30 business days")
		}
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	a, err := s.db.CreateAdverseAction(r.Context(), tenantOf(r), checkID, req.Reasons, days)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/adverse-actions/"+a.ID)
	writeJSON(w, http.StatusCreated, a)
}

// handleAdverseActionList lists adverse actions, newest first; ?check= narrows them to one check.
// The same handlers serve API keys (their mode) and the dashboard (both modes, or ?mode=).
func (s *Server) handleAdverseActionList(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixAdverseAction)
	if err != nil {
		writeError(w, r, err)
		return
	}
	checkID := r.URL.Query().Get("check")
	if checkID != "" && !bgcheck.ValidID(bgcheck.PrefixCheck, checkID) {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "check", Message: "is not a check id"}))
		return
	}
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListAdverseActions(r.Context(), scope.accountID, scope.mode, checkID, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleAdverseActionGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "adverseActionID", bgcheck.PrefixAdverseAction)
	if err != nil {
		writeError(w, r, err)
		return
	}
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a, err := s.db.FindAdverseAction(r.Context(), scope.accountID, scope.mode, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// handleAdverseActionCancel withdraws an adverse action in its waiting period: no final notice.
func (s *Server) handleAdverseActionCancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "adverseActionID", bgcheck.PrefixAdverseAction)
	if err != nil {
		writeError(w, r, err)
		return
	}
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a, err := s.db.CancelAdverseAction(r.Context(), scope.accountID, scope.mode, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
