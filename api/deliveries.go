package api

import (
	"net/http"

	"github.com/bgcheck/bgcheck"
)

func (s *Server) handleEndpointDeliveries(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := listParams(r, bgcheck.PrefixDelivery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	status := bgcheck.DeliveryStatus(r.URL.Query().Get("status"))
	if status != "" && !status.Valid() {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "status", Message: "must be pending, succeeded, failed or canceled"}))
		return
	}
	page, err := s.db.ListEndpointDeliveries(r.Context(), tenantOf(r), id, status, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleDeliveryGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "deliveryID", bgcheck.PrefixDelivery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.FindDelivery(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	attempts := d.Attempts
	if attempts == nil {
		attempts = []bgcheck.DeliveryAttempt{}
	}
	writeJSON(w, http.StatusOK, deliveryWithAttempts{Delivery: d, Attempts: attempts})
}

// deliveryWithAttempts is the single-delivery view: attempts always shown, [] when none yet (the
// shallower field wins over the record's omitempty one).
type deliveryWithAttempts struct {
	*bgcheck.Delivery
	Attempts []bgcheck.DeliveryAttempt `json:"attempts"`
}

// handleDeliveryRedeliver starts a fresh attempt series: same event, same bytes, new workflow.
func (s *Server) handleDeliveryRedeliver(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "deliveryID", bgcheck.PrefixDelivery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.Redeliver(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}
