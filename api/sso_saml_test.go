package api_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crewjam/saml"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
)

// samlConnection connects account A to a fresh IdP for acme.test by its metadata URL, trusts our
// service provider there, and adds users carol (an employee) and eve (e-mail elsewhere).
func (s *ssoScene) samlConnection(extra map[string]any) (*idptest.SAMLIdP, ssoConnectionJSON) {
	s.t.Helper()
	idp := idptest.StartSAML(s.t)
	idp.AddUser("carol", "carol-password", "carol@acme.test")
	idp.AddUser("eve", "eve-password", "eve@elsewhere.test")
	settings := map[string]any{"metadata_url": idp.URL + "/metadata"}
	for k, v := range extra {
		settings[k] = v
	}
	c := decode[ssoConnectionJSON](s.t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "saml", "name": "Acme SAML", "enabled": true, "jit_provisioning": true, "domains": []string{"acme.test"}, "saml": settings,
	}), http.StatusCreated)
	c = s.verifyDomains(c)
	md := s.do("GET", "/api/v1/auth/sso/saml/"+c.ID+"/metadata", "", nil)
	if md.Status != 200 || md.Header.Get("Content-Type") != "application/samlmetadata+xml" {
		s.t.Fatalf("SP metadata: %d %s", md.Status, md.Body)
	}
	idp.AddServiceProvider("bgcheck", md.Body)
	return idp, c
}

// samlLogin walks a browser to the IdP's answer: the auto-posting form that carries the
// SAMLResponse to our ACS, not yet posted.
func (s *ssoScene) samlLogin(b *idptest.Browser, email, user, password string) (acs string, form url.Values) {
	s.t.Helper()
	login := b.Get(s.t, s.startSSO(b, email))
	answer := b.Submit(s.t, login, map[string]string{"user": user, "password": password})
	action, values := answer.Form(s.t)
	if values.Get("SAMLResponse") == "" {
		s.t.Fatalf("the IdP did not answer with a SAMLResponse: %d %.400s", answer.Status, answer.Body)
	}
	return action.String(), values
}

// rewriteResponse changes the decoded SAML response of a form.
func rewriteResponse(t *testing.T, form url.Values, change func(string) string) url.Values {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(form.Get("SAMLResponse"))
	if err != nil {
		t.Fatal(err)
	}
	changed := change(string(raw))
	if changed == string(raw) {
		t.Fatal("the rewrite changed nothing")
	}
	out := url.Values{}
	for k, v := range form {
		out[k] = v
	}
	out.Set("SAMLResponse", base64.StdEncoding.EncodeToString([]byte(changed)))
	return out
}

func TestSAMLSignInCreatesAnAdminThenFindsThemAgain(t *testing.T) {
	s := newSSOScene(t)
	idp, c := s.samlConnection(nil)
	if c.SAML == nil || c.SAML.IdPEntityID != idp.URL+"/metadata" || c.SAML.MetadataURL == nil ||
		c.SAML.ACSURL != s.srv.URL+"/api/v1/auth/sso/saml/"+c.ID+"/acs" || c.SAML.SPEntityID != c.SAML.SPMetadataURL || c.SAML.AllowIdPInitiated {
		t.Fatalf("saml settings %+v", c.SAML)
	}
	b := s.browser()
	acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
	_, claims := s.exchange(b.Post(t, acs, form))
	if len(claims.AMR) != 1 || claims.AMR[0] != "sso" || claims.SSOConnection != c.ID || claims.Account != s.a.ID || claims.Role != bgcheck.RoleAdmin {
		t.Fatalf("claims %+v", claims)
	}
	// The same response posted again is refused: its sign-in is spent.
	detail := wantRefused(t, b.Post(t, acs, form), 401, bgcheck.CodeSSOFailed)
	if !strings.Contains(detail, "already used") {
		t.Fatalf("replay detail %q", detail)
	}
	b2 := s.browser()
	acs, form = s.samlLogin(b2, "carol@acme.test", "carol", "carol-password")
	_, again := s.exchange(b2.Post(t, acs, form))
	if again.Subject != claims.Subject || s.countUsers("carol@acme.test") != 1 || s.countIdentities() != 1 {
		t.Fatalf("second sign-in is %s, first %s", again.Subject, claims.Subject)
	}
}

func TestSAMLSignInRefusals(t *testing.T) {
	s := newSSOScene(t)
	idp, c := s.samlConnection(nil)
	refused := func(t *testing.T, b *idptest.Browser, acs string, form url.Values, want string) {
		t.Helper()
		detail := wantRefused(t, b.Post(t, acs, form), 401, bgcheck.CodeSSOFailed)
		if !strings.Contains(detail, want) {
			t.Fatalf("detail %q, want it to say %q", detail, want)
		}
		if s.countUsers("carol@acme.test")+s.countUsers("mallory@acme.test")+s.countIdentities() != 0 {
			t.Fatal("a refused response created something")
		}
	}

	t.Run("wrong password at the IdP", func(t *testing.T) {
		b := s.browser()
		login := b.Get(t, s.startSSO(b, "carol@acme.test"))
		p := b.Submit(t, login, map[string]string{"user": "carol", "password": "wrong"})
		if !strings.Contains(p.Body, "Invalid username or password") || strings.Contains(p.Body, "SAMLResponse\" value=\"P") {
			t.Fatalf("the IdP did not refuse: %.300s", p.Body)
		}
	})
	t.Run("tampered assertion", func(t *testing.T) {
		b := s.browser()
		acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
		refused(t, b, acs, rewriteResponse(t, form, func(x string) string {
			return strings.ReplaceAll(x, "carol@acme.test", "mallory@acme.test")
		}), "signature")
	})
	t.Run("an assertion that is not signed itself", func(t *testing.T) {
		b := s.browser()
		acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
		refused(t, b, acs, rewriteResponse(t, form, func(x string) string {
			// The Response's signature comes first, the assertion's own last: drop that one.
			starts := regexp.MustCompile(`<ds:Signature[ >]`).FindAllStringIndex(x, -1)
			if len(starts) != 2 {
				t.Fatalf("%d signatures in the response", len(starts))
			}
			k := starts[1][0]
			end := strings.Index(x[k:], "</ds:Signature>") + len("</ds:Signature>")
			return x[:k] + x[k+end:]
		}), "not signed")
	})
	t.Run("SHA-1 signatures", func(t *testing.T) {
		idp.Server.IDP.SignatureMethod = dsig.RSASHA1SignatureMethod
		defer func() { idp.Server.IDP.SignatureMethod = dsig.RSASHA256SignatureMethod }()
		b := s.browser()
		acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
		refused(t, b, acs, form, "RSA-SHA256 or stronger")
	})
	t.Run("a SHA-1 digest under a strong signature", func(t *testing.T) {
		b := s.browser()
		acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
		refused(t, b, acs, rewriteResponse(t, form, func(x string) string {
			if !strings.Contains(x, "xmlenc#sha256") {
				t.Fatal("the IdP's digests are not SHA-256")
			}
			return strings.ReplaceAll(x, "http://www.w3.org/2001/04/xmlenc#sha256", "http://www.w3.org/2000/09/xmldsig#sha1")
		}), "SHA-256 or stronger")
	})
	t.Run("expired assertion", func(t *testing.T) {
		b := s.browser()
		login := b.Get(t, s.startSSO(b, "carol@acme.test"))
		// The IdP's clock is ten minutes behind: its assertion is stale when it arrives. The
		// clock is crewjam's package-wide one, which our ACS reads too: it is put back before the
		// response is posted, and whatever happens.
		realClock := saml.TimeNow
		t.Cleanup(func() { saml.TimeNow = realClock })
		saml.TimeNow = func() time.Time { return realClock().Add(-10 * time.Minute) }
		answer := b.Submit(t, login, map[string]string{"user": "carol", "password": "carol-password"})
		saml.TimeNow = realClock
		action, form := answer.Form(t)
		refused(t, b, action.String(), form, "expired")
	})
	t.Run("an e-mail outside the connection's domains", func(t *testing.T) {
		b := s.browser()
		acs, form := s.samlLogin(b, "someone@acme.test", "eve", "eve-password")
		refused(t, b, acs, form, "outside this connection's verified domains")
	})
	t.Run("a response stripped of its RelayState", func(t *testing.T) {
		b := s.browser()
		acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
		form.Del("RelayState")
		refused(t, b, acs, form, "unknown")
	})
	t.Run("an IdP-initiated response, IdP-initiated sign-in being off", func(t *testing.T) {
		// The IdP signs carol in to us unprompted, as its portal's tile would.
		idp.AddShortcut("bgcheck", c.SAML.SPEntityID)
		b := s.browser()
		acs, form := idp.SignInIdPInitiated(t, b, "bgcheck", "carol", "carol-password")
		refused(t, b, acs, form, "IdP-initiated sign-in is off")
	})
	t.Run("a disabled connection", func(t *testing.T) {
		b := s.browser()
		login := b.Get(t, s.startSSO(b, "carol@acme.test")) // started while enabled
		decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 200)
		defer s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": true})
		action, form := b.Submit(t, login, map[string]string{"user": "carol", "password": "carol-password"}).Form(t)
		refused(t, b, action.String(), form, "disabled")
		wantProblem(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "carol@acme.test"}), 404, bgcheck.CodeSSONotConfigured)
	})
	t.Run("wrong audience", func(t *testing.T) {
		// Another service provider's assertion, delivered to our ACS: the IdP trusts a second
		// SP, with our ACS URL but its own entity id, and signs in to it unprompted.
		md := s.do("GET", "/api/v1/auth/sso/saml/"+c.ID+"/metadata", "", nil).Body
		other := strings.Replace(string(md), `entityID="`+c.SAML.SPEntityID+`"`, `entityID="https://other.example/sp"`, 1)
		idp.AddServiceProvider("other", []byte(other))
		idp.AddShortcut("other", "https://other.example/sp")
		decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA,
			map[string]any{"saml": map[string]any{"allow_idp_initiated": true}}), 200)
		defer s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"saml": map[string]any{"allow_idp_initiated": false}})
		b := s.browser()
		acs, form := idp.SignInIdPInitiated(t, b, "other", "carol", "carol-password")
		refused(t, b, acs, form, "AudienceRestriction")
	})
}

// An admin of the account whose e-mail the IdP asserts is linked on their first SAML sign-in,
// and found by the IdP's subject after.
func TestSAMLSignInLinksTheExistingAdmin(t *testing.T) {
	s := newSSOScene(t)
	idp, _ := s.samlConnection(nil)
	idp.AddUser("owner", "owner-idp-password", "owner@acme.test")
	owner, _, err := s.db.FindUserByEmail(t.Context(), "owner@acme.test")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b := s.browser()
		acs, form := s.samlLogin(b, "owner@acme.test", "owner", "owner-idp-password")
		_, claims := s.exchange(b.Post(t, acs, form))
		if claims.Subject != owner.ID || claims.SSOConnection == "" || s.countUsers("owner@acme.test") != 1 || s.countIdentities() != 1 {
			t.Fatalf("signed in as %s, want the existing admin %s; %d identities", claims.Subject, owner.ID, s.countIdentities())
		}
	}
}

// A SAML connection's test signs in at the IdP, enabled or not, records what the IdP said and
// what a sign-in would do, and signs nobody in.
func TestSAMLConnectionTestSignsNobodyIn(t *testing.T) {
	s := newSSOScene(t)
	_, c := s.samlConnection(nil)
	decode[ssoConnectionJSON](t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, map[string]any{"enabled": false}), 200)
	b := s.browser()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/api/v1/admin/sso/connections/"+c.ID+"/test", nil)
	req.Header.Set("Authorization", "Bearer "+s.adminA)
	var start struct {
		RedirectURL string `json:"redirect_url"`
		Protocol    string `json:"protocol"`
	}
	decodeInto(t, b.Do(t, req).Body, &start)
	if start.Protocol != "saml" || start.RedirectURL == "" {
		t.Fatalf("test start %+v", start)
	}
	answer := b.Submit(t, b.Get(t, start.RedirectURL), map[string]string{"user": "carol", "password": "carol-password"})
	action, form := answer.Form(t)
	end := b.Post(t, action.String(), form)
	if loc := end.Location(); loc == nil || loc.Fragment != "/settings?sso_test="+c.ID {
		t.Fatalf("the test ended at %v", end.Header.Get("Location"))
	}
	got := decode[ssoConnectionJSON](t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200)
	if got.LastTest == nil || !got.LastTest.OK || !strings.Contains(got.LastTest.Detail, "carol@acme.test") ||
		!strings.Contains(got.LastTest.Detail, "created") || got.LastSignInAt != nil || s.countUsers("carol@acme.test") != 0 {
		t.Fatalf("last test %+v; last sign-in %v; %d users", got.LastTest, got.LastSignInAt, s.countUsers("carol@acme.test"))
	}
}

func TestSAMLIdPInitiatedSignInWithReplayCache(t *testing.T) {
	s := newSSOScene(t)
	idp, c := s.samlConnection(map[string]any{"allow_idp_initiated": true})
	idp.AddShortcut("bgcheck", c.SAML.SPEntityID)
	b := s.browser()
	acs, form := idp.SignInIdPInitiated(t, b, "bgcheck", "carol", "carol-password")
	if form.Get("RelayState") != "" {
		t.Fatalf("IdP-initiated response with RelayState %q", form.Get("RelayState"))
	}
	s.exchange(b.Post(t, acs, form))
	detail := wantRefused(t, b.Post(t, acs, form), 401, bgcheck.CodeSSOFailed)
	if !strings.Contains(detail, "presented before") {
		t.Fatalf("replay detail %q", detail)
	}

	// An IdP configured with a landing page sends it as the RelayState: it names no sign-in of
	// ours and is ignored; the person lands on the dashboard, and the replay cache still holds.
	idp.AddShortcutWithRelayState("landing", c.SAML.SPEntityID, "https://evil.example/after-login")
	b = s.browser()
	acs, form = idp.SignInIdPInitiated(t, b, "landing", "carol", "carol-password")
	if form.Get("RelayState") != "https://evil.example/after-login" {
		t.Fatalf("the IdP sent RelayState %q", form.Get("RelayState"))
	}
	end := b.Post(t, acs, form)
	if loc := end.Location(); loc == nil || !strings.HasPrefix(loc.String(), s.srv.URL+"/dashboard/#/sso?code=") {
		t.Fatalf("ended at %v", end.Header.Get("Location"))
	}
	s.exchange(end)
	wantRefused(t, b.Post(t, acs, form), 401, bgcheck.CodeSSOFailed)

	// Sign-ins started here still go through their RelayState, and a response to one cannot
	// pass for an IdP-initiated one by losing it.
	b = s.browser()
	acs, form = s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
	stripped := url.Values{"SAMLResponse": form["SAMLResponse"]}
	if detail := wantRefused(t, b.Post(t, acs, stripped), 401, bgcheck.CodeSSOFailed); !strings.Contains(detail, "unknown") {
		t.Fatalf("detail %q", detail)
	}
	// Nor by dropping the Response's InResponseTo: the signed assertion still names the request.
	b = s.browser()
	acs, form = s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
	unsolicited := rewriteResponse(t, url.Values{"SAMLResponse": form["SAMLResponse"]}, func(x string) string {
		return regexp.MustCompile(`(<samlp:Response[^>]*?) InResponseTo="[^"]*"`).ReplaceAllString(x, "$1")
	})
	if detail := wantRefused(t, b.Post(t, acs, unsolicited), 401, bgcheck.CodeSSOFailed); !strings.Contains(detail, "answers a sign-in started here") {
		t.Fatalf("detail %q", detail)
	}
	s.exchange(b.Post(t, acs, form))
}

func TestSAMLMetadataPastedAsXML(t *testing.T) {
	s := newSSOScene(t)
	idp := idptest.StartSAML(t)
	c := decode[ssoConnectionJSON](t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "saml", "domains": []string{"acme.test"}, "saml": map[string]any{"metadata_xml": string(idp.Metadata())},
	}), http.StatusCreated)
	if c.SAML.MetadataURL != nil || c.SAML.IdPEntityID != idp.URL+"/metadata" || c.Enabled {
		t.Fatalf("saml %+v enabled %v", c.SAML, c.Enabled)
	}
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "saml", "domains": []string{"b.test"}, "saml": map[string]any{"metadata_xml": "<nope/>"}}), "saml.metadata_xml")
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "saml", "domains": []string{"b.test"}, "saml": map[string]any{"metadata_url": idp.URL + "/nothing-here"}}), "saml.metadata_url")
	wantFieldError(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminB, map[string]any{
		"protocol": "saml", "domains": []string{"b.test"}, "saml": map[string]any{"metadata_url": "https://10.1.2.3/metadata"}}), "saml.metadata_url")
}
