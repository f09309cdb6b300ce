package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
)

func TestAdminDeliveryGet(t *testing.T) {
	s := newAdminScene(t)
	liveEP := s.createEndpoint(s.a.LiveKey, "https://example.com/l")
	d := s.emit(s.a.ID, bgcheck.ModeLive, "check.completed", liveEP.ID)[0]
	path := adminPath + "/deliveries/" + d

	type withAttempts struct {
		adminDeliveryJSON
		Attempts []struct {
			Number     int     `json:"number"`
			StatusCode *int    `json:"status_code"`
			Error      *string `json:"error"`
			DurationMS int     `json:"duration_ms"`
		} `json:"attempts"`
	}
	got := decode[withAttempts](t, s.bearer("GET", path, s.adminA, nil), http.StatusOK)
	if got.ID != d || got.Mode != "live" || got.Status != "pending" || got.Attempts == nil || len(got.Attempts) != 0 {
		t.Fatalf("before any attempt: %+v", got)
	}
	s.finish(d, bgcheck.DeliveryFailed)
	got = decode[withAttempts](t, s.bearer("GET", path, s.adminA, nil), http.StatusOK)
	if got.Status != "failed" || len(got.Attempts) != 1 || got.Attempts[0].Number != 1 ||
		got.Attempts[0].StatusCode == nil || *got.Attempts[0].StatusCode != 503 || got.Attempts[0].Error == nil {
		t.Fatalf("after a failed attempt: %+v", got)
	}
	// Scoped to the admin's account; unknown and malformed ids are not found.
	wantProblem(t, s.bearer("GET", path, s.adminB, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("GET", adminPath+"/deliveries/"+bgcheck.NewID(bgcheck.PrefixDelivery), s.adminA, nil), 404, bgcheck.CodeNotFound)
	wantProblem(t, s.bearer("GET", adminPath+"/deliveries/dlv_malformed", s.adminA, nil), 404, bgcheck.CodeNotFound)
}

func TestAdminWebhookEndpoints(t *testing.T) {
	s := newAdminScene(t)
	testEP, liveEP := s.createEndpoint(s.a.TestKey, "https://example.com/t"), s.createEndpoint(s.a.LiveKey, "https://example.com/l")
	s.createEndpoint(s.b.TestKey, "https://example.com/b")
	ds := s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", testEP.ID)
	ds = append(ds, s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", testEP.ID)...)
	ds = append(ds, s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", testEP.ID)...)
	s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", testEP.ID) // stays pending
	s.finish(ds[0], bgcheck.DeliverySucceeded)
	s.finish(ds[1], bgcheck.DeliverySucceeded)
	s.finish(ds[2], bgcheck.DeliveryFailed)

	type health struct {
		ID     string `json:"id"`
		Mode   string `json:"mode"`
		URL    string `json:"url"`
		Recent struct {
			Succeeded   int      `json:"succeeded"`
			Failed      int      `json:"failed"`
			Pending     int      `json:"pending"`
			SuccessRate *float64 `json:"success_rate"`
		} `json:"recent"`
	}
	got := decode[pageJSON[health]](t, s.bearer("GET", adminPath+"/webhook-endpoints", s.adminA, nil), http.StatusOK).Data
	if len(got) != 2 || got[0].ID != liveEP.ID || got[1].ID != testEP.ID {
		t.Fatalf("endpoints %+v, want the live then the test endpoint of account A only", got)
	}
	if r := got[0].Recent; r.Succeeded+r.Failed+r.Pending != 0 || r.SuccessRate != nil {
		t.Errorf("an endpoint without deliveries: %+v", r)
	}
	r := got[1].Recent
	if r.Succeeded != 2 || r.Failed != 1 || r.Pending != 1 || r.SuccessRate == nil || *r.SuccessRate < 0.66 || *r.SuccessRate > 0.67 {
		t.Errorf("recent outcomes %+v (rate %v), want 2 succeeded, 1 failed, 1 pending, rate 2/3", r, r.SuccessRate)
	}
}

func TestAdminOverviewHourly(t *testing.T) {
	s := newAdminScene(t)
	ep := s.createEndpoint(s.a.TestKey, "https://example.com/t")
	ds := s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)
	ds = append(ds, s.emit(s.a.ID, bgcheck.ModeTest, "check.completed", ep.ID)...)
	s.finish(ds[0], bgcheck.DeliveryFailed)
	type hour struct {
		Hour      time.Time `json:"hour"`
		Pending   int       `json:"pending"`
		Succeeded int       `json:"succeeded"`
		Failed    int       `json:"failed"`
		Canceled  int       `json:"canceled"`
	}
	o := decode[struct {
		Hourly []hour `json:"hourly"`
	}](t, s.bearer("GET", adminPath+"/overview", s.adminA, nil), http.StatusOK)
	if len(o.Hourly) != 24 {
		t.Fatalf("%d hours, want 24", len(o.Hourly))
	}
	for i := 1; i < 24; i++ {
		if o.Hourly[i].Hour.Sub(o.Hourly[i-1].Hour) != time.Hour {
			t.Fatalf("hours %v then %v", o.Hourly[i-1].Hour, o.Hourly[i].Hour)
		}
	}
	last := o.Hourly[23]
	// The deliveries were made just now: in the last hour, unless the hour turned in between.
	if time.Since(last.Hour) < 59*time.Minute && (last.Failed != 1 || last.Pending != 1) {
		t.Errorf("the current hour counts %+v, want 1 failed and 1 pending", last)
	}
	total := 0
	for _, h := range o.Hourly {
		total += h.Pending + h.Succeeded + h.Failed + h.Canceled
	}
	if total != 2 {
		t.Errorf("the series counts %d deliveries, want 2", total)
	}
}
