package api

import (
	"errors"
	"net/http"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/workflows"
)

// adminAccount is the account an admin's request acts for. Admins always belong to one (the
// database insists); refusing a token without one keeps "" away from storage methods where it
// means "any account".
func adminAccount(r *http.Request) (string, error) {
	if acct := userOf(r).Account; acct != "" {
		return acct, nil
	}
	return "", bgcheck.Errorf(bgcheck.CodeForbidden, "this sign-in belongs to no account")
}

// overviewJSON is the answer of GET /admin/overview (API.md §5).
type overviewJSON struct {
	Account struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"account"`
	Counts struct {
		Candidates       int `json:"candidates"`
		Checks           int `json:"checks"`
		WebhookEndpoints int `json:"webhook_endpoints"`
		Events24h        int `json:"events_24h"`
	} `json:"counts"`
	Deliveries struct {
		Pending   int `json:"pending"`
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		Canceled  int `json:"canceled"`
	} `json:"deliveries"`
	FailedDeliveries []*bgcheck.Delivery `json:"failed_deliveries"`
	// Hourly is the last 24 hours' deliveries per hour by outcome, for the dashboard's chart.
	Hourly []postgres.HourlyDeliveries `json:"hourly"`
	// Quota is the live quota of checks of the current month and its use (issue 15).
	Quota *bgcheck.Quota `json:"quota"`
}

func (s *Server) handleAdminOverview(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	o, err := s.db.FindAccountOverview(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var out overviewJSON
	out.Account.ID, out.Account.Name = o.Account.ID, o.Account.Name
	out.Counts.Candidates, out.Counts.WebhookEndpoints, out.Counts.Events24h = o.Candidates, o.WebhookEndpoints, o.Events24h
	if out.Counts.Checks, err = s.db.CountAccountChecks(r.Context(), acct); err != nil {
		writeError(w, r, err)
		return
	}
	d := o.Deliveries
	out.Deliveries.Pending, out.Deliveries.Succeeded, out.Deliveries.Failed, out.Deliveries.Canceled = d.Pending, d.Succeeded, d.Failed, d.Canceled
	out.FailedDeliveries, out.Hourly = o.FailedDeliveries, o.Hourly
	if out.Quota, err = s.db.FindQuota(r.Context(), bgcheck.Tenant{AccountID: acct, Mode: bgcheck.ModeLive}); err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAdminDeliveries lists the account's deliveries of both modes; ?status=, ?mode=,
// ?event_type= and ?endpoint_id= narrow the list.
func (s *Server) handleAdminDeliveries(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	p, err := listParams(r, bgcheck.PrefixDelivery)
	if e := (*bgcheck.Error)(nil); errors.As(err, &e) {
		v.fields = append(v.fields, e.Fields...)
	}
	q := r.URL.Query()
	f := postgres.DeliveryFilter{
		Status: bgcheck.DeliveryStatus(q.Get("status")), Mode: bgcheck.Mode(q.Get("mode")),
		EventType: q.Get("event_type"), EndpointID: q.Get("endpoint_id"),
	}
	if f.Status != "" && !f.Status.Valid() {
		v.add("status", "must be pending, succeeded, failed or canceled")
	}
	if f.Mode != "" && !f.Mode.Valid() {
		v.add("mode", "must be test or live")
	}
	if f.EventType != "" && !webhook.ValidEventType(f.EventType) {
		v.add("event_type", "unknown event type "+quote(f.EventType))
	}
	if f.EndpointID != "" && !bgcheck.ValidID(bgcheck.PrefixEndpoint, f.EndpointID) {
		v.add("endpoint_id", "must be a webhook endpoint id (we_…)")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListAccountDeliveries(r.Context(), acct, f, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleAdminRedeliver is the webhook route's redelivery for a delivery of either mode.
func (s *Server) handleAdminRedeliver(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "deliveryID", bgcheck.PrefixDelivery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.RedeliverInAccount(r.Context(), acct, id)
	if errors.Is(err, postgres.ErrDeliveryInProgress) {
		d, err = s.redeliverStalled(r.Context(), acct, "", id)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}

// handleAdminDeliveryGet is the webhook route's single-delivery view for a delivery of either mode.
func (s *Server) handleAdminDeliveryGet(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "deliveryID", bgcheck.PrefixDelivery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := s.db.FindAccountDelivery(r.Context(), acct, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	attempts := d.Attempts
	if attempts == nil {
		attempts = []bgcheck.DeliveryAttempt{}
	}
	// The workflow of the current series: a redelivery runs under a new id (workflows.WorkflowID).
	writeJSON(w, http.StatusOK, struct {
		deliveryWithAttempts
		WorkflowID string `json:"workflow_id"`
	}{deliveryWithAttempts{Delivery: d, Attempts: attempts}, workflows.WorkflowID(d.ID, d.Series)})
}

// endpointHealthJSON is an endpoint as GET /admin/webhook-endpoints shows it.
type endpointHealthJSON struct {
	*bgcheck.WebhookEndpoint
	Recent struct {
		Succeeded int `json:"succeeded"`
		Failed    int `json:"failed"`
		Pending   int `json:"pending"`
		// SuccessRate is succeeded/(succeeded+failed), null when nothing has finished.
		SuccessRate *float64 `json:"success_rate"`
	} `json:"recent"`
}

// handleAdminEndpoints lists the account's endpoints of both modes with how their deliveries of
// the last 24 hours ended.
func (s *Server) handleAdminEndpoints(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	eps, err := s.db.ListAccountEndpointHealth(r.Context(), acct)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := struct {
		Data []endpointHealthJSON `json:"data"`
	}{Data: make([]endpointHealthJSON, len(eps))}
	for i, e := range eps {
		v := &out.Data[i]
		v.WebhookEndpoint = e.WebhookEndpoint
		v.Recent.Succeeded, v.Recent.Failed, v.Recent.Pending = e.Succeeded, e.Failed, e.Pending
		if done := e.Succeeded + e.Failed; done > 0 {
			rate := float64(e.Succeeded) / float64(done)
			v.Recent.SuccessRate = &rate
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAdminChecks lists the account's checks of both modes; ?status=, ?assessment= and ?mode=
// narrow the list.
func (s *Server) handleAdminChecks(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	p, err := listParams(r, bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	f := postgres.CheckFilter{Status: bgcheck.CheckStatus(q.Get("status")), Assessment: bgcheck.Assessment(q.Get("assessment"))}
	mode := bgcheck.Mode(q.Get("mode"))
	var v validator
	if f.Status != "" && !f.Status.Valid() {
		v.add("status", "must be invitation_pending, pending, complete, dispute, suspended, canceled or failed")
	}
	if f.Assessment != "" && f.Assessment != bgcheck.AssessmentClear && f.Assessment != bgcheck.AssessmentConsider {
		v.add("assessment", "must be clear or consider")
	}
	if mode != "" && !mode.Valid() {
		v.add("mode", "must be test or live")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListAccountChecks(r.Context(), acct, mode, f, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// handleAdminCheckGet shows one of the account's checks, of either mode, with the id of its
// workflow for the Temporal UI.
func (s *Server) handleAdminCheckGet(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "checkID", bgcheck.PrefixCheck)
	if err != nil {
		writeError(w, r, err)
		return
	}
	c, err := s.db.FindAccountCheck(r.Context(), acct, id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		*bgcheck.Check
		WorkflowID string `json:"workflow_id"`
	}{c, workflows.CheckWorkflowID(c.ID)})
}

// handleAdminEndpointEnable turns an endpoint of the account back on (one click in the dashboard
// for an endpoint disabled for failing); its failing clock starts afresh.
func (s *Server) handleAdminEndpointEnable(w http.ResponseWriter, r *http.Request) {
	acct, err := adminAccount(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ep, err := s.db.EnableEndpoint(r.Context(), acct, "", id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}
