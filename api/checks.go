package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/screening"
)

// InvitationTTL is how long a candidate has to consent to a check (Checkr's invitations: 7 days).
const InvitationTTL = 7 * 24 * time.Hour

func (s *Server) checkRoutes(r chi.Router) {
	read, write := requireScope(bgcheck.ScopeChecksRead), requireScope(bgcheck.ScopeChecksWrite)
	r.With(read).Get("/", s.handleCheckList)
	r.With(write).Post("/", s.handleCheckCreate)
	r.Route("/{checkID}", func(r chi.Router) {
		r.With(read).Get("/", s.handleCheckGet)
		r.With(write).Post("/cancel", s.handleCheckCancel)
		r.With(read).Get("/report", s.handleCheckReport)
		r.With(write).Post("/adverse-actions", s.handleAdverseActionCreate)
	})
}

// handlePackageList lists the fixed catalogue of packages and their screenings.
func (s *Server) handlePackageList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"data": screening.Catalogue(), "has_more": false, "next_cursor": nil})
}

type checkRequest struct {
	CandidateID *string `json:"candidate_id"`
	Package     *string `json:"package"`
}

// handleCheckCreate creates a check of a package for a candidate of the key's account and mode:
// it waits for the candidate's consent, asked for by mail. Live mode has no screening provider
// yet, so a live check is refused (422 no_provider) rather than faked.
func (s *Server) handleCheckCreate(w http.ResponseWriter, r *http.Request) {
	var req checkRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	var pkg screening.Package
	switch {
	case req.CandidateID == nil || *req.CandidateID == "":
		v.add("candidate_id", "is required")
	case !bgcheck.ValidID(bgcheck.PrefixCandidate, *req.CandidateID):
		v.add("candidate_id", "is not a candidate id")
	}
	if req.Package == nil || *req.Package == "" {
		v.add("package", "is required")
	} else if p, ok := screening.FindPackage(*req.Package); !ok {
		v.add("package", "is not a package of GET /api/v1/packages")
	} else {
		pkg = p
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	t := tenantOf(r)
	if t.Mode == bgcheck.ModeLive {
		writeError(w, r, bgcheck.Errorf(bgcheck.CodeNoProvider,
			"no screening provider is configured for live mode; create checks with a test key, which uses the sandbox"))
		return
	}
	types := make([]string, len(pkg.Screenings))
	for i, st := range pkg.Screenings {
		types[i] = string(st)
	}
	price := pkg.PriceCents
	if t.Mode == bgcheck.ModeTest {
		price = 0
	}
	c, err := s.db.CreateCheck(r.Context(), t, postgres.NewCheck{
		CandidateID: *req.CandidateID, Package: pkg.Slug, Screenings: types, InvitationTTL: InvitationTTL, UnitPriceCents: price,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/checks/"+c.ID)
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) handleCheckList(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	f := postgres.CheckFilter{
		Status:     bgcheck.CheckStatus(r.URL.Query().Get("status")),
		Assessment: bgcheck.Assessment(r.URL.Query().Get("assessment")),
	}
	if f.Status != "" && !f.Status.Valid() {
		v.add("status", "must be invitation_pending, pending, complete, dispute, suspended, canceled or failed")
	}
	if f.Assessment != "" && f.Assessment != bgcheck.AssessmentClear && f.Assessment != bgcheck.AssessmentConsider {
		v.add("assessment", "must be clear or consider")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListChecks(r.Context(), tenantOf(r), f, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleCheckGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindCheck(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// handleCheckCancel cancels a check that has not finished; its workflow is stopped by the
// dispatcher. check.failed is emitted with status canceled (API.md §10).
func (s *Server) handleCheckCancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.CancelCheck(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleCheckReport(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	rep, err := s.db.FindReport(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
