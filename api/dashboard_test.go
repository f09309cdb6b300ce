package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bgcheck/bgcheck/api"
)

func TestDashboardIsServedEmbedded(t *testing.T) {
	e := newEnv(t, api.Options{TemporalUIURL: "https://temporal.example.com"})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(e.srv.URL + "/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/dashboard/" {
		t.Fatalf("/dashboard answered %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	for path, want := range map[string]string{
		"/dashboard/": "text/html", "/dashboard/app.js": "javascript", "/dashboard/sso.js": "javascript", "/dashboard/style.css": "text/css",
		"/dashboard/config.json": "application/json",
	} {
		r := e.do("GET", path, "", nil)
		if r.Status != http.StatusOK || !strings.Contains(r.Header.Get("Content-Type"), want) {
			t.Errorf("%s: %d %q", path, r.Status, r.Header.Get("Content-Type"))
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
	}
	var cfg map[string]string
	if err := json.Unmarshal(e.do("GET", "/dashboard/config.json", "", nil).Body, &cfg); err != nil || cfg["temporal_ui_url"] != "https://temporal.example.com" {
		t.Errorf("config.json %v (%v)", cfg, err)
	}
	// The shell carries no account data: that comes only from the admin routes.
	if r := e.do("GET", "/dashboard/", "", nil); strings.Contains(string(r.Body), "acct_") {
		t.Errorf("the page embeds account data: %s", r.Body)
	}
}
