package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/webhook"
)

// An event is shown as exactly the bytes its deliveries carry: the envelope of API.md §6.

func (s *Server) handleEventList(w http.ResponseWriter, r *http.Request) {
	p, err := listParams(r, bgcheck.PrefixEvent)
	if err != nil {
		writeError(w, r, err)
		return
	}
	eventType := r.URL.Query().Get("type")
	if eventType != "" && !webhook.ValidEventType(eventType) {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "type", Message: "unknown event type " + quote(eventType)}))
		return
	}
	page, err := s.db.ListEvents(r.Context(), tenantOf(r), eventType, p)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := bgcheck.Page[json.RawMessage]{HasMore: page.HasMore, NextCursor: page.NextCursor, Data: make([]json.RawMessage, len(page.Data))}
	for i, ev := range page.Data {
		out.Data[i] = ev.Body
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleEventGet(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "eventID", bgcheck.PrefixEvent)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ev, err := s.db.FindEvent(r.Context(), tenantOf(r), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ev.Body)
}

type testEventRequest struct {
	Type *string         `json:"type"`
	Data json.RawMessage `json:"data"`
}

// handleEventTest creates an event of any type in test mode, delivered like any other, so an
// integration can exercise its receiver. Without data, the type's sample data is sent.
func (s *Server) handleEventTest(w http.ResponseWriter, r *http.Request) {
	if apiKeyOf(r).Mode != bgcheck.ModeTest {
		writeError(w, r, bgcheck.Errorf(bgcheck.CodeTestModeOnly, "test events can only be sent with a test key (svc_test_…)"))
		return
	}
	var req testEventRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	switch {
	case req.Type == nil || *req.Type == "":
		v.add("type", "is required")
	case !webhook.ValidEventType(*req.Type):
		v.add("type", "unknown event type "+quote(*req.Type))
	}
	var data any
	if len(req.Data) > 0 && !bytes.Equal(req.Data, []byte("null")) {
		var obj map[string]any
		if err := json.Unmarshal(req.Data, &obj); err != nil {
			v.add("data", "must be a JSON object")
		} else if req.Type != nil && *req.Type == webhook.EventCheckCompleted {
			v.check("data", checkCompletedData(obj))
		}
		data = req.Data
	} else if req.Type != nil {
		data = webhook.SampleData(*req.Type)
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	ev, err := s.db.CreateEvent(r.Context(), tenantOf(r), *req.Type, data)
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.metrics.EventAccepted(ev.Type, ev.Deliveries)
	w.Header().Set("Location", "/api/v1/events/"+ev.ID)
	writeJSON(w, http.StatusCreated, ev.Body)
}

// checkCompletedData holds a check.completed payload to the spec: check_id a UUID, status and
// disposition strings.
func checkCompletedData(obj map[string]any) string {
	id, _ := obj["check_id"].(string)
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return "check.completed data needs check_id, a UUID"
	}
	for _, f := range []string{"status", "disposition"} {
		if _, ok := obj[f].(string); !ok {
			return "check.completed data needs " + f + ", a string"
		}
	}
	return ""
}

// handleEventTypes lists the event catalogue: each type, what causes it, and the JSON Schema of
// its data. The service's own events match these schemas (its tests check every one).
func handleEventTypes(w http.ResponseWriter, r *http.Request) {
	types := webhook.Catalogue()
	writeJSON(w, http.StatusOK, map[string]any{"data": types, "has_more": false, "next_cursor": nil})
}
