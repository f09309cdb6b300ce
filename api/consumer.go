package api

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
)

// Disclosure is the FCRA disclosure a candidate reads before authorizing a check: a standalone
// document, in plain words, that a consumer report will be obtained for employment purposes.
const Disclosure = "DISCLOSURE REGARDING BACKGROUND INVESTIGATION. The employer that invited you may obtain a " +
	"consumer report about you for employment purposes from bgcheck, a consumer reporting agency. The report may " +
	"include your Social Security number trace, criminal records (national, county and sex offender registries), " +
	"and, if the package says so, your driving record and your employment and education history. You have the " +
	"right to a copy of the report, and to dispute anything in it that is inaccurate or incomplete. " +
	"A Summary of Your Rights Under the Fair Credit Reporting Act is available at https://www.consumerfinance.gov/learnmore/."

// consumerRoutes are a candidate's: bearer routes of consumer users, who see only the checks and
// reports of the candidates their invitations linked them to.
func (s *Server) consumerRoutes(r chi.Router) {
	r.Use(s.requireBearer, requireRole(bgcheck.RoleConsumer))
	r.Get("/checks", s.handleConsumerCheckList)
	r.Get("/checks/{checkID}", s.handleConsumerCheckGet)
	r.Post("/checks/{checkID}/authorize", s.handleConsumerAuthorize)
	r.Get("/reports", s.handleConsumerReports)
	r.Get("/reports/{checkID}/disputes", s.handleConsumerDisputes)
	r.Post("/reports/{checkID}/disputes", s.handleConsumerDisputeFile)
	r.Get("/disputes", s.handleConsumerDisputes)
	r.Get("/disputes/{disputeID}", s.handleConsumerDisputeGet)
}

// handleInvitationAccept signs a candidate in with the token of an invitation mail: as the
// consumer user with the candidate's address, created on first use and linked to the candidate.
// The answer is a token pair and the check the invitation is for.
func (s *Server) handleInvitationAccept(w http.ResponseWriter, r *http.Request) {
	hash, err := decodeTokenHash(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	user, inv, err := s.db.UseInvitation(r.Context(), hash)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pair, err := s.newSession(r.Context(), user, auth.Subject{})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		tokenPair
		CheckID string `json:"check_id"`
	}{pair, inv.CheckID})
}

// consumerCheck is a check as its candidate sees it: with the disclosure to read before
// authorizing, and the last four digits of the SSN they gave (never the whole number).
type consumerCheck struct {
	*bgcheck.Check
	Disclosure string `json:"disclosure"`
	SSNLast4   string `json:"ssn_last4"`
}

func (s *Server) consumerView(r *http.Request, c *bgcheck.Check) (consumerCheck, error) {
	last4, err := s.db.SSNLast4(r.Context(), c.CandidateID)
	return consumerCheck{Check: c, Disclosure: Disclosure, SSNLast4: last4}, err
}

func (s *Server) handleConsumerCheckList(w http.ResponseWriter, r *http.Request) {
	checks, err := s.db.ConsumerChecks(r.Context(), userOf(r).Subject)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := make([]consumerCheck, 0, len(checks))
	for _, c := range checks {
		v, err := s.consumerView(r, c)
		if err != nil {
			writeError(w, r, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out, "has_more": false, "next_cursor": nil})
}

func (s *Server) handleConsumerCheckGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.ConsumerCheck(r.Context(), userOf(r).Subject, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	v, err := s.consumerView(r, c)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type authorizeRequest struct {
	SSN     *string `json:"ssn"`
	Address *string `json:"address"`
	Consent *bool   `json:"consent"`
}

var ssnPattern = regexp.MustCompile(`^[0-9]{3}-?[0-9]{2}-?[0-9]{4}$`)

// handleConsumerAuthorize records the candidate's consent, after the disclosure, with the
// details the check needs: the full SSN and the current address, stored sealed; only the SSN's
// last four digits are ever shown again. The check's workflow is then told, and its screenings
// run. A suspended check is authorized again with corrected details.
func (s *Server) handleConsumerAuthorize(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req authorizeRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if req.SSN == nil || !ssnPattern.MatchString(*req.SSN) {
		v.add("ssn", "must be a Social Security number: nine digits, as 123-45-6789 or 123456789")
	}
	if req.Address == nil || strings.TrimSpace(*req.Address) == "" {
		v.add("address", "is required: your current address on one line")
	} else {
		v.maxLen("address", *req.Address, 300)
	}
	if req.Consent == nil || !*req.Consent {
		v.add("consent", "must be true: you authorize the background check described in the disclosure")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	digits := strings.ReplaceAll(*req.SSN, "-", "")
	c, err := s.db.AuthorizeCheck(r.Context(), userOf(r).Subject, id,
		postgres.CandidateDetails{SSN: digits, Address: strings.TrimSpace(*req.Address)}, digits[len(digits)-4:])
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.consumerView(r, c)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleConsumerReports lists the candidate's own reports: every consumer has the right to a
// copy.
func (s *Server) handleConsumerReports(w http.ResponseWriter, r *http.Request) {
	reports, err := s.db.ConsumerReports(r.Context(), userOf(r).Subject)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": reports, "has_more": false, "next_cursor": nil})
}
