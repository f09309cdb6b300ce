package api_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bgcheck/bgcheck/internal/dev/browsertest"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
)

// TestDashboardSSOSignInInTheBrowser walks the dashboard's single sign-on in headless Chromium:
// the e-mail first, the identity provider's own login page, and back to the dashboard signed
// in; then the admin finds the connection on Settings → SSO, and a password admin of another
// domain still gets the password field.
func TestDashboardSSOSignInInTheBrowser(t *testing.T) {
	tab, newTab := browsertest.Start(t)
	s := newSSOScene(t)
	_, c := s.oidcConnection()
	url := s.srv.URL

	var who, settings, location string
	run(t, tab, "sign in through the identity provider",
		chromedp.Navigate(url+"/dashboard/"),
		chromedp.WaitVisible("#email", chromedp.ByQuery),
		chromedp.SendKeys("#email", "alice@acme.test", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		// The provider's login form, on its own origin.
		chromedp.WaitVisible(`input[name="username"]`, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="username"]`, "alice", chromedp.ByQuery),
		chromedp.SendKeys(`input[name="password"]`, "alice-password", chromedp.ByQuery),
		chromedp.Click(`button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#hourly-chart`, chromedp.ByQuery),
		chromedp.Text("#who", &who, chromedp.ByQuery),
		chromedp.Location(&location),
		chromedp.Click(`a[href="#/settings"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#sso .sso-connection`, chromedp.ByQuery),
		chromedp.Text("#sso", &settings, chromedp.ByQuery))
	if who != "alice@acme.test" {
		t.Fatalf("signed in as %q", who)
	}
	if !strings.Contains(settings, c.OIDC.RedirectURI) || !strings.Contains(settings, "acme.test") || !strings.Contains(settings, "verified") {
		t.Fatalf("the SSO settings read %q", settings)
	}
	if strings.Contains(location, "code=") {
		t.Fatalf("the one-time code stayed in the address bar: %s", location)
	}

	// The connection is edited in place; the SAML card shows our SP metadata to copy; the
	// break-glass picker names admins by e-mail.
	idp := idptest.StartSAML(t)
	decode[ssoConnectionJSON](t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "saml", "domains": []string{"acme-eu.test"}, "saml": map[string]any{"metadata_xml": string(idp.Metadata())}}), 201)
	var heading, spMetadata, breakGlass string
	run(t, tab, "edit the connection, read the SP metadata and the break-glass picker",
		chromedp.Navigate(url+"/dashboard/#/overview"),
		chromedp.WaitVisible(`#hourly-chart`, chromedp.ByQuery),
		chromedp.Click(`a[href="#/settings"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#sso-edit-oidc`, chromedp.ByQuery),
		chromedp.Click(`#sso-edit-oidc`, chromedp.ByQuery),
		chromedp.WaitVisible(`#sso-edit-oidc-name`, chromedp.ByQuery),
		chromedp.SetValue(`#sso-edit-oidc-name`, "Acme Okta", chromedp.ByQuery),
		chromedp.Click(`#sso-edit-oidc-save`, chromedp.ByQuery),
		chromedp.WaitVisible(`//h3[contains(., "Acme Okta")]`, chromedp.BySearch),
		chromedp.Text(`.sso-connection[data-id="`+c.ID+`"] h3`, &heading, chromedp.ByQuery),
		chromedp.Value(`#sso-sp-metadata-saml`, &spMetadata, chromedp.ByQuery),
		chromedp.Text(`#sso-break-glass`, &breakGlass, chromedp.ByQuery))
	if !strings.Contains(heading, "Acme Okta") {
		t.Fatalf("heading %q", heading)
	}
	if !strings.Contains(spMetadata, "AssertionConsumerService") || !strings.Contains(spMetadata, "HTTP-POST") {
		t.Fatalf("SP metadata %q", spMetadata)
	}
	if !strings.Contains(breakGlass, "owner@acme.test") || strings.Contains(breakGlass, "usr_") {
		t.Fatalf("break-glass picker %q", breakGlass)
	}
	if got := decode[ssoConnectionJSON](t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200); got.Name != "Acme Okta" || !got.Enabled {
		t.Fatalf("after the edit: %+v", got)
	}

	// Another domain has no SSO: the password field appears and works.
	other := newTab()
	run(t, other, "sign in with a password", browsertest.SignIn(url, "owner@b.test", adminPassword),
		chromedp.WaitVisible(`#hourly-chart`, chromedp.ByQuery), chromedp.Text("#who", &who, chromedp.ByQuery))
	if who != "owner@b.test" {
		t.Fatalf("signed in as %q", who)
	}
}
