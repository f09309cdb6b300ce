package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/netguard"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
)

const (
	maxURLLength         = 2048
	maxDescriptionLength = 500
)

// endpointWithSecret is the answer to create: the record and, once, its secret.
type endpointWithSecret struct {
	*bgcheck.WebhookEndpoint
	Secret string `json:"secret"`
}

// endpointRequest is the body of create and of PATCH; absent fields are nil.
type endpointRequest struct {
	URL         *string  `json:"url"`
	Events      []string `json:"events"`
	Description *string  `json:"description"`
	Enabled     *bool    `json:"enabled"`
}

func (s *Server) handleEndpointCreate(w http.ResponseWriter, r *http.Request) {
	var req endpointRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if req.URL == nil {
		v.add("url", "is required")
	} else {
		v.check("url", s.checkWebhookURL(*req.URL))
	}
	events := []string{webhook.AllEvents}
	if req.Events != nil {
		events = v.eventTypes("events", req.Events)
	}
	e := bgcheck.WebhookEndpoint{Events: events, Enabled: true, Secret: webhook.NewSecret()}
	if req.URL != nil {
		e.URL = *req.URL
	}
	if req.Description != nil {
		v.maxLen("description", *req.Description, maxDescriptionLength)
		e.Description = *req.Description
	}
	if req.Enabled != nil {
		e.Enabled = *req.Enabled
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	created, err := s.db.CreateEndpoint(r.Context(), tenantOf(r), e)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/webhooks/endpoints/"+created.ID)
	writeJSON(w, http.StatusCreated, endpointWithSecret{created, created.Secret})
}

func (s *Server) handleEndpointList(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	page, err := s.db.ListEndpoints(r.Context(), tenantOf(r), p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) handleEndpointGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	e, err := s.db.FindEndpoint(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleEndpointUpdate(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req endpointRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	patch := postgres.EndpointPatch{URL: req.URL, Description: req.Description, Enabled: req.Enabled}
	if req.URL != nil {
		v.check("url", s.checkWebhookURL(*req.URL))
	}
	if req.Events != nil {
		patch.Events = v.eventTypes("events", req.Events)
	}
	if req.Description != nil {
		v.maxLen("description", *req.Description, maxDescriptionLength)
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	e, err := s.db.UpdateEndpoint(r.Context(), tenantOf(r), id, patch)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) handleEndpointDelete(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// The database cancels the endpoint's pending deliveries and records their workflows as to
	// be canceled; the dispatcher cancels them in Temporal, retrying until it can.
	if _, err := s.db.DeleteEndpoint(r.Context(), tenantOf(r), id); err != nil {
		writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// DefaultSecretOverlap is how long a rotated-out secret keeps signing when the request does not
// say; MaxSecretOverlap the most it may.
const (
	DefaultSecretOverlap = 24 * time.Hour
	MaxSecretOverlap     = 7 * 24 * time.Hour
)

// handleEndpointRotateSecret gives the endpoint a new signing secret. The old one keeps signing
// beside it for expire_previous_in seconds (default 24 h; 0 stops it at once), so receivers can
// switch without refusing a delivery. The body is optional.
func (s *Server) handleEndpointRotateSecret(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req struct {
		ExpirePreviousIn *int64 `json:"expire_previous_in"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			writeError(w, r, err)
			return
		}
	}
	overlap := DefaultSecretOverlap
	if req.ExpirePreviousIn != nil {
		overlap = time.Duration(*req.ExpirePreviousIn) * time.Second
		if *req.ExpirePreviousIn < 0 || overlap > MaxSecretOverlap {
			writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "expire_previous_in",
				Message: "must be seconds from 0 (the old secret stops at once) to 604800 (7 days)"}))
			return
		}
	}
	secret := webhook.NewSecret()
	ep, err := s.db.RotateEndpointSecret(r.Context(), tenantOf(r), id, secret, overlap)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "secret": secret, "previous_secret_expires_at": ep.PreviousSecretExpiresAt})
}

// checkWebhookURL returns why raw cannot be a webhook URL, or "" when it can: an absolute
// http(s) URL of at most 2,048 characters whose host is not a private, loopback or link-local
// address (however the address is spelled) nor a local-only name, unless the operator allows
// private targets; a host with an IPv6 zone or a "%" is refused always. Names are not resolved
// here: the worker checks each address it connects to.
func (s *Server) checkWebhookURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > maxURLLength {
		return "must be at most 2048 characters"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http or https URL"
	}
	host := u.Hostname()
	if host == "" {
		return "must be an absolute http or https URL"
	}
	if strings.Contains(host, "%") {
		// An IPv6 zone (http://[fe80::1%25eth0]/) only ever names a link-local or loopback
		// route, and no public host name contains a percent sign.
		return "must not name an IPv6 zone or contain % in the host"
	}
	if s.opts.AllowPrivateWebhookURLs {
		return ""
	}
	if addr, ok := netguard.ParseHost(host); ok {
		if !netguard.IsPublic(addr) {
			return "must not point at a private, loopback or link-local address"
		}
	} else if netguard.IsLocalName(host) {
		return "must not point at a local host name"
	}
	return ""
}

// validator collects field errors so one answer lists every problem with a request.
type validator struct {
	fields []bgcheck.FieldError
}

func (v *validator) add(field, msg string) {
	v.fields = append(v.fields, bgcheck.FieldError{Field: field, Message: msg})
}

// check adds msg for field unless it is "".
func (v *validator) check(field, msg string) {
	if msg != "" {
		v.add(field, msg)
	}
}

func (v *validator) maxLen(field, s string, n int) {
	if utf8.RuneCountInString(s) > n {
		v.add(field, "must be at most "+itoa(n)+" characters")
	}
}

// eventTypes checks a subscription list and returns it without duplicates: the types of API.md
// §6, or ["*"] alone for all of them.
func (v *validator) eventTypes(field string, events []string) []string {
	if len(events) == 0 {
		v.add(field, `must list at least one event type, or ["*"] for all`)
		return nil
	}
	out := make([]string, 0, len(events))
	for _, e := range events {
		switch {
		case e == webhook.AllEvents && len(events) > 1 && slices.ContainsFunc(events, func(x string) bool { return x != webhook.AllEvents }):
			v.add(field, `"*" subscribes to every type and must be the only entry`)
			return nil
		case e != webhook.AllEvents && !webhook.ValidEventType(e):
			v.add(field, "unknown event type "+quote(e))
			return nil
		case !slices.Contains(out, e):
			out = append(out, e)
		}
	}
	return out
}

func (v *validator) err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return bgcheck.ValidationError(v.fields...)
}

// handleEndpointPause holds the endpoint's deliveries: their workflows wait, durably, and no
// attempt is made or counted until the endpoint is resumed. New events still make deliveries.
func (s *Server) handleEndpointPause(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ep, err := s.db.PauseEndpoint(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}

// handleEndpointResume lets a paused endpoint's deliveries go on: the waiting workflows are told
// at once, and their attempts resume where the schedule stood.
func (s *Server) handleEndpointResume(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ep, err := s.db.ResumeEndpoint(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}

// handleEndpointRecover redelivers every failed delivery of the endpoint created since a time,
// as one operation whose progress GET …/recoveries/{id} shows: 202 and the recovery. The same
// since again answers the same recovery, however far along: the operation is idempotent.
func (s *Server) handleEndpointRecover(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var req struct {
		Since *time.Time `json:"since"`
	}
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Since == nil || req.Since.After(time.Now()) {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "since",
			Message: "is required: an RFC 3339 time, not in the future; failed deliveries created since then are redelivered"}))
		return
	}
	rec, _, err := s.db.StartRecovery(r.Context(), tenantOf(r), id, req.Since.UTC())
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/webhooks/endpoints/"+id+"/recoveries/"+rec.ID)
	writeJSON(w, http.StatusAccepted, rec)
}

// handleEndpointRecovery shows a recovery's progress.
func (s *Server) handleEndpointRecovery(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "endpointID", bgcheck.PrefixEndpoint)
	if err != nil {
		writeError(w, r, err)
		return
	}
	rid, err := pathID(r, "recoveryID", bgcheck.PrefixRecovery)
	if err != nil {
		writeError(w, r, err)
		return
	}
	rec, err := s.db.FindRecovery(r.Context(), tenantOf(r), id, rid)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}
