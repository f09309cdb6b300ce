package api

import (
	"net/http"
	"net/mail"
	"regexp"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
)

const maxNameLength = 100

// candidateRequest is the body of create and of PATCH. In a PATCH, absent fields stay as they
// are, and "" clears one of the optional fields (email, phone, dob).
type candidateRequest struct {
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	DOB       *string `json:"dob"`
}

// validate checks the fields present; create additionally requires both names.
func (c *candidateRequest) validate(create bool) error {
	var v validator
	for _, f := range []struct {
		name  string
		value *string
	}{{"first_name", c.FirstName}, {"last_name", c.LastName}} {
		switch {
		case f.value == nil && create, f.value != nil && strings.TrimSpace(*f.value) == "":
			v.add(f.name, "is required")
		case f.value != nil:
			v.maxLen(f.name, *f.value, maxNameLength)
		}
	}
	if c.Email != nil && *c.Email != "" {
		v.check("email", checkEmail(*c.Email))
	}
	if c.Phone != nil && *c.Phone != "" && !e164.MatchString(*c.Phone) {
		v.add("phone", "must be an E.164 number such as +14155550100")
	}
	if c.DOB != nil && *c.DOB != "" {
		v.check("dob", checkDOB(*c.DOB))
	}
	return v.err()
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

func checkEmail(s string) string {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "must be a plain e-mail address such as jane@example.com"
	}
	return ""
}

func checkDOB(s string) string {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return "must be a date written YYYY-MM-DD"
	}
	if d.Year() < 1900 || d.After(time.Now()) {
		return "must be a date between 1900-01-01 and today"
	}
	return ""
}

// emptyToNil turns "" into nil: on create an empty optional field is simply absent.
func emptyToNil(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

func (s *Server) handleCandidateCreate(w http.ResponseWriter, r *http.Request) {
	var req candidateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if err := req.validate(true); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.CreateCandidate(r.Context(), tenantOf(r), bgcheck.Candidate{
		FirstName: *req.FirstName, LastName: *req.LastName,
		Email: emptyToNil(req.Email), Phone: emptyToNil(req.Phone), DOB: emptyToNil(req.DOB),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/candidates/"+c.ID)
	writeJSON(w, http.StatusCreated, c)
}

func (s *Server) handleCandidateList(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixCandidate)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListCandidates(r.Context(), tenantOf(r), p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleCandidateGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "candidateID", bgcheck.PrefixCandidate)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindCandidate(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// handleCandidateUpdate applies a PATCH; a change also records a candidate.updated event.
func (s *Server) handleCandidateUpdate(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "candidateID", bgcheck.PrefixCandidate)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req candidateRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if err := req.validate(false); err != nil {
		writeError(w, r, err)
		return
	}
	c, ev, err := s.db.UpdateCandidate(r.Context(), tenantOf(r), id, postgres.CandidatePatch{
		FirstName: req.FirstName, LastName: req.LastName, Email: req.Email, Phone: req.Phone, DOB: req.DOB,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ev != nil { // nil when the patch changed nothing
		s.metrics.EventAccepted(ev.Type, ev.Deliveries)
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) handleCandidateDelete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "candidateID", bgcheck.PrefixCandidate)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.db.DeleteCandidate(r.Context(), tenantOf(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
