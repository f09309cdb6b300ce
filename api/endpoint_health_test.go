package api_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

// Attempts keep the endpoint's health: a failure starts the failing streak (and asks for a
// watch), a success ends it. An endpoint failing past the window is disabled and recorded, with
// its admins' notice pending; the dashboard enables it again in one click.
func TestEndpointHealthDisableAndEnable(t *testing.T) {
	s := newAdminScene(t)
	ctx := context.Background()
	ep := s.createEndpoint(s.a.TestKey, "https://example.com/hooks")
	health := func() map[string]any {
		return decode[map[string]any](t, s.do("GET", "/api/v1/webhooks/endpoints/"+ep.ID, s.a.TestKey, nil), http.StatusOK)
	}
	s.finish(s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)[0], bgcheck.DeliveryFailed)
	if h := health(); h["failing_since"] == nil || h["last_success_at"] != nil {
		t.Fatalf("after a failure: %v", h)
	}
	if ids, err := s.db.HealthChecks(ctx, 10); err != nil || len(ids) != 1 || ids[0].EndpointID != ep.ID || ids[0].FailingSince == nil {
		t.Fatalf("watch requests %v, %v", ids, err)
	}
	s.finish(s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)[0], bgcheck.DeliverySucceeded)
	if h := health(); h["failing_since"] != nil || h["last_success_at"] == nil {
		t.Fatalf("after a success: %v", h)
	}
	s.finish(s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)[0], bgcheck.DeliveryFailed)
	// Say the streak began six days ago.
	var since time.Time
	if err := s.db.Pool().QueryRow(ctx, `UPDATE webhook_endpoints SET failing_since = now() - interval '6 days' WHERE id = $1
		RETURNING failing_since`, ep.ID).Scan(&since); err != nil {
		t.Fatal(err)
	}
	window := 5 * 24 * time.Hour
	if off, err := s.db.DisableFailingEndpoint(ctx, ep.ID, since.Add(time.Second), window); err != nil || off {
		t.Fatalf("a streak that is not the endpoint's disabled it: %v, %v", off, err)
	}
	if off, err := s.db.DisableFailingEndpoint(ctx, ep.ID, since, 7*24*time.Hour); err != nil || off {
		t.Fatalf("a streak shorter than the window disabled it: %v, %v", off, err)
	}
	if off, err := s.db.DisableFailingEndpoint(ctx, ep.ID, since, window); err != nil || !off {
		t.Fatalf("a six-day streak did not disable the endpoint: %v, %v", off, err)
	}
	if h := health(); h["enabled"] != false || h["disabled_reason"] != "failing" || h["disabled_at"] == nil {
		t.Fatalf("disabled: %v", h)
	}
	notice, err := s.db.PendingDisabledNotice(ctx, ep.ID)
	if err != nil || notice == nil || !slices.Contains(notice.AdminEmails, "admin@a.test") || slices.Contains(notice.AdminEmails, "admin@b.test") {
		t.Fatalf("the admins' notice: %+v, %v", notice, err)
	}
	if err := s.db.MarkDisabledNoticeSent(ctx, notice.EventID); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.db.PendingDisabledNotice(ctx, ep.ID); again != nil {
		t.Fatalf("the notice is pending again: %+v", again)
	}
	// Another account's admin cannot enable it; this account's can.
	wantProblem(t, s.bearer("POST", "/api/v1/admin/webhook-endpoints/"+ep.ID+"/enable", s.adminB, nil), 404, bgcheck.CodeNotFound)
	got := decode[map[string]any](t, s.bearer("POST", "/api/v1/admin/webhook-endpoints/"+ep.ID+"/enable", s.adminA, nil), http.StatusOK)
	if got["enabled"] != true || got["failing_since"] != nil || got["disabled_reason"] != nil {
		t.Fatalf("enabled again: %v", got)
	}
	var records int
	if err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM endpoint_health_events WHERE endpoint_id = $1`, ep.ID).Scan(&records); err != nil || records != 2 {
		t.Fatalf("%d health records (disabled, enabled), %v", records, err)
	}
}

// Recover answers 202 and the recovery, the same one for the same since; its progress is
// readable; bad input is refused and another tenant sees nothing.
func TestEndpointRecoverRoutes(t *testing.T) {
	s := newAdminScene(t)
	ep := s.createEndpoint(s.a.TestKey, "https://example.com/hooks")
	for range 3 {
		s.finish(s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)[0], bgcheck.DeliveryFailed)
	}
	path := "/api/v1/webhooks/endpoints/" + ep.ID + "/recover"
	wantFieldError(t, s.do("POST", path, s.a.TestKey, map[string]any{}), "since")
	wantFieldError(t, s.do("POST", path, s.a.TestKey, map[string]any{"since": time.Now().Add(time.Hour)}), "since")
	wantProblem(t, s.do("POST", path, s.b.TestKey, map[string]any{"since": time.Now().Add(-time.Hour)}), 404, bgcheck.CodeNotFound)
	since := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	first := decode[map[string]any](t, s.do("POST", path, s.a.TestKey, map[string]any{"since": since}), http.StatusAccepted)
	if first["total"] != float64(3) || first["status"] != "running" || first["redelivered"] != float64(0) {
		t.Fatalf("recovery %v", first)
	}
	again := decode[map[string]any](t, s.do("POST", path, s.a.TestKey, map[string]any{"since": since}), http.StatusAccepted)
	if again["id"] != first["id"] {
		t.Fatalf("the same since made another recovery: %v", again)
	}
	progress := "/api/v1/webhooks/endpoints/" + ep.ID + "/recoveries/" + first["id"].(string)
	decode[map[string]any](t, s.do("GET", progress, s.a.TestKey, nil), http.StatusOK)
	wantProblem(t, s.do("GET", progress, s.a.LiveKey, nil), 404, bgcheck.CodeNotFound)
}
