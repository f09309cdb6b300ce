package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

func (s *Server) disputeRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeChecksRead), requireScope(bgcheck.ScopeChecksWrite)
	r.With(read).Get("/", s.handleDisputeList)
	r.With(read).Get("/{disputeID}", s.handleDisputeGet)
	r.With(write).Post("/{disputeID}/resolve", s.handleDisputeResolve)
}

// handleDisputeList lists disputes, newest first; ?check= and ?status= narrow them.
func (s *Server) handleDisputeList(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := listParams(r, bgcheck.PrefixDispute)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := postgres.DisputeFilter{Mode: scope.mode, CheckID: q.Get("check"), Status: bgcheck.DisputeStatus(q.Get("status"))}
	var v validator
	if f.CheckID != "" && !bgcheck.ValidID(bgcheck.PrefixCheck, f.CheckID) {
		v.add("check", "is not a check id")
	}
	if f.Status != "" && f.Status != bgcheck.DisputeOpen && f.Status != bgcheck.DisputeResolved {
		v.add("status", "must be open or resolved")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListDisputes(r.Context(), scope.accountID, f, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleDisputeGet(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "disputeID", bgcheck.PrefixDispute)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.FindDispute(r.Context(), scope.accountID, scope.mode, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

type resolveRequest struct {
	Resolution bgcheck.Resolution `json:"resolution"`
	Note       string             `json:"note"`
}

// handleDisputeResolve settles a test-mode dispute (API.md §10: the agency resolves live ones,
// with bgcheckctl). A correction or a deletion revises the report.
func (s *Server) handleDisputeResolve(w http.ResponseWriter, r *http.Request) {
	scope, err := scopeOf(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "disputeID", bgcheck.PrefixDispute)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if scope.mode == bgcheck.ModeLive {
		writeError(w, r, bgcheck.Errorf(bgcheck.CodeTestModeOnly,
			"live-mode disputes are resolved by the consumer reporting agency, not by API key"))
		return
	}
	var req resolveRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if !req.Resolution.Valid() {
		v.add("resolution", "must be corrected, verified or deleted")
	}
	v.maxLen("note", req.Note, 1000)
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	by := bgcheck.ResolvedByAPI
	if scope.admin {
		by = bgcheck.ResolvedByAdmin
	}
	// Looked up in the request's scope first, so another mode's or account's dispute is 404.
	if _, err := s.db.FindDispute(r.Context(), scope.accountID, scope.mode, id); err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.ResolveDispute(r.Context(), scope.accountID, id,
		postgres.DisputeResolution{Resolution: req.Resolution, Note: strings.TrimSpace(req.Note), By: by}, true)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

type disputeRequest struct {
	Screening string `json:"screening"`
	Reason    string `json:"reason"`
}

// handleConsumerDisputeFile lets a candidate dispute one screening of their own report (FCRA
// §611): the agency has 30 days to reinvestigate, and an adverse action waits meanwhile.
func (s *Server) handleConsumerDisputeFile(w http.ResponseWriter, r *http.Request) {
	checkID, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req disputeRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if strings.TrimSpace(req.Screening) == "" {
		v.add("screening", "is required: the type of the screening you dispute, as the report names it")
	}
	if strings.TrimSpace(req.Reason) == "" {
		v.add("reason", "is required: what in the screening is inaccurate or incomplete")
	} else {
		v.maxLen("reason", req.Reason, 2000)
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.FileDispute(r.Context(), userOf(r).Subject, checkID, strings.TrimSpace(req.Screening), strings.TrimSpace(req.Reason))
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/consumer/disputes/"+d.ID)
	writeJSON(w, http.StatusCreated, d)
}

// handleConsumerDisputes lists the candidate's own disputes, of every report or, under
// /reports/{checkID}/disputes, of one.
func (s *Server) handleConsumerDisputes(w http.ResponseWriter, r *http.Request) {
	checkID := ""
	if chi.URLParam(r, "checkID") != "" {
		var err error
		if checkID, err = pathID(r, "checkID", bgcheck.PrefixCheck); err != nil {
			writeError(w, r, err)
			return
		}
	}
	disputes, err := s.db.ConsumerDisputes(r.Context(), userOf(r).Subject, checkID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": disputes, "has_more": false, "next_cursor": nil})
}

// handleConsumerDisputeGet shows one of the candidate's own disputes.
func (s *Server) handleConsumerDisputeGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "disputeID", bgcheck.PrefixDispute)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.ConsumerDispute(r.Context(), userOf(r).Subject, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
