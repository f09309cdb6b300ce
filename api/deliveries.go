package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
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
	t := tenantOf(r)
	d, err := s.db.Redeliver(r.Context(), t, id)
	if errors.Is(err, postgres.ErrDeliveryInProgress) {
		d, err = s.redeliverStalled(r.Context(), t.AccountID, t.Mode, id)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}

// redeliverStalled retries a redelivery refused because the delivery is pending: if its workflow
// has ended (canceled or terminated in the Temporal UI, or lost), nothing will ever finish the
// series, and a new one is what the caller needs. mode "" means either mode (an admin).
func (s *Server) redeliverStalled(ctx context.Context, accountID string, mode bgcheck.Mode, id string) (*bgcheck.Delivery, error) {
	if s.opts.Workflows == nil {
		return nil, postgres.ErrDeliveryInProgress
	}
	d, err := s.db.FindAccountDelivery(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if mode != "" && d.Mode != mode {
		return nil, bgcheck.ErrNotFound
	}
	running, err := s.opts.Workflows.WorkflowRunning(ctx, d.ID, d.Series)
	if err != nil {
		return nil, err
	}
	if running {
		return nil, postgres.ErrDeliveryInProgress
	}
	return s.db.RedeliverStalled(ctx, accountID, mode, id, d.Series)
}
