package api_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
)

// fieldMessage asserts a 422 naming field and returns its message and the request id.
func fieldMessage(t *testing.T, r *response, field string) (string, string) {
	t.Helper()
	p := wantProblem(t, r, http.StatusUnprocessableEntity, bgcheck.CodeValidationFailed)
	for _, f := range p.Errors {
		if f.Field == field {
			return f.Message, p.RequestID
		}
	}
	t.Fatalf("422 does not name field %q: %+v", field, p.Errors)
	return "", ""
}

// Metadata that cannot be fetched or read is refused in our words; what the resolver, the
// dialler or the XML and X.509 parsers said goes to the log, beside the request id.
func TestSAMLMetadataRefusedInOurWords(t *testing.T) {
	s := newSSOScene(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/metadata"
	ln.Close()
	create := func(saml map[string]any) *response {
		return s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
			"protocol": "saml", "domains": []string{"acme.test"}, "saml": saml})
	}
	for _, tc := range []struct {
		name, field, want string
		saml              map[string]any
		leaks             []string
	}{
		{"a refused connection", "saml.metadata_url", "the metadata URL could not be fetched: the host refused the connection",
			map[string]any{"metadata_url": closed}, []string{"dial tcp", "connect:", "Get \""}},
		{"XML that is not", "saml.metadata_xml", "the metadata is not well-formed XML",
			map[string]any{"metadata_xml": `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"><`}, []string{"XML syntax", "unexpected EOF"}},
		{"a certificate that is not one", "saml.metadata_xml", "signing certificate that cannot be parsed as X.509",
			map[string]any{"metadata_xml": `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com">
  <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><KeyDescriptor use="signing">
  <KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>AAAA</X509Certificate></X509Data></KeyInfo></KeyDescriptor>
  <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/>
  </IDPSSODescriptor></EntityDescriptor>`}, []string{"x509:", "asn1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, requestID := fieldMessage(t, create(tc.saml), tc.field)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q, want %q", msg, tc.want)
			}
			for _, leak := range tc.leaks {
				if strings.Contains(msg, leak) {
					t.Fatalf("the answer %q repeats the library's %q", msg, leak)
				}
			}
			logged := false
			for _, line := range strings.Split(s.logs.String(), "\n") {
				if strings.Contains(line, requestID) && strings.Contains(line, "SAML metadata refused") && strings.Contains(line, tc.leaks[0]) {
					logged = true
				}
			}
			if !logged {
				t.Fatalf("the library's words are not logged with request id %s", requestID)
			}
		})
	}
	// An OIDC issuer that cannot be reached is told the same way.
	msg, _ := fieldMessage(t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "oidc", "domains": []string{"acme.test"},
		"oidc": map[string]any{"issuer": strings.TrimSuffix(closed, "/metadata"), "client_id": "x", "client_secret": "y"}}), "oidc.issuer")
	if !strings.Contains(msg, "the issuer could not be reached: the host refused the connection") || strings.Contains(msg, "dial tcp") {
		t.Fatalf("message %q", msg)
	}
	if n := len(decode[pageJSON[ssoConnectionJSON]](t, s.bearer("GET", "/api/v1/admin/sso/connections", s.adminA, nil), 200).Data); n != 0 {
		t.Fatalf("%d connections made by refused requests", n)
	}
}

// expired rewrites every validUntil in metadata to a day in the past.
func expired(metadata []byte) string {
	return regexp.MustCompile(`validUntil="[^"]*"`).ReplaceAllString(string(metadata), `validUntil="2020-01-01T00:00:00Z"`)
}

// Metadata past its validUntil is refused, pasted or fetched, on create and on change, and the
// connection keeps what it had.
func TestExpiredSAMLMetadataIsRefused(t *testing.T) {
	s := newSSOScene(t)
	idp := idptest.StartSAML(t)
	old := expired(idp.Metadata())
	if !strings.Contains(old, "2020-01-01") {
		t.Fatal("the IdP's metadata states no validUntil")
	}
	served := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, old) }))
	defer served.Close()
	create := func(saml map[string]any) *response {
		return s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
			"protocol": "saml", "domains": []string{"acme.test"}, "saml": saml})
	}
	for field, saml := range map[string]map[string]any{
		"saml.metadata_xml": {"metadata_xml": old},
		"saml.metadata_url": {"metadata_url": served.URL + "/metadata"},
	} {
		if msg, _ := fieldMessage(t, create(saml), field); !strings.Contains(msg, "validUntil, 2020-01-01T00:00:00Z, has passed") {
			t.Fatalf("%s: message %q", field, msg)
		}
	}
	c := decode[ssoConnectionJSON](t, create(map[string]any{"metadata_xml": string(idp.Metadata())}), http.StatusCreated)
	msg, _ := fieldMessage(t, s.bearer("PATCH", "/api/v1/admin/sso/connections/"+c.ID, s.adminA,
		map[string]any{"saml": map[string]any{"metadata_xml": strings.Replace(old, idp.URL+"/metadata", "https://other.example/idp", 1)}}), "saml.metadata_xml")
	if !strings.Contains(msg, "validUntil") {
		t.Fatalf("message %q", msg)
	}
	if got := decode[ssoConnectionJSON](t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200); got.SAML.IdPEntityID != idp.URL+"/metadata" {
		t.Fatalf("a refused change took: entity id %s", got.SAML.IdPEntityID)
	}
}

// A sign-in uses the stored metadata, however old, while it is valid: fetching it again is the
// worker's, in the background. Once it has expired, sign-ins answer 502 sso_unavailable and say
// what the last refresh found; the connection shows that refresh's failure too.
func TestSAMLSignInUsesTheStoredMetadata(t *testing.T) {
	s := newSSOScene(t)
	idp := idptest.StartSAML(t)
	idp.AddUser("carol", "carol-password", "carol@acme.test")
	var fetches atomic.Int32
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(idp.Metadata())
	}))
	defer host.Close()
	c := decode[ssoConnectionJSON](t, s.bearer("POST", "/api/v1/admin/sso/connections", s.adminA, map[string]any{
		"protocol": "saml", "enabled": true, "jit_provisioning": true, "domains": []string{"acme.test"},
		"saml": map[string]any{"metadata_url": host.URL + "/metadata"}}), http.StatusCreated)
	c = s.verifyDomains(c)
	idp.AddServiceProvider("bgcheck", s.do("GET", "/api/v1/auth/sso/saml/"+c.ID+"/metadata", "", nil).Body)
	if c.SAML.MetadataNextRefreshAt == nil || c.SAML.MetadataNextRefreshAt.Sub(time.Now()) < 23*time.Hour {
		t.Fatalf("next refresh %v", c.SAML.MetadataNextRefreshAt)
	}
	// Two days old and overdue: still signs in, without a fetch.
	if _, err := s.db.Pool().Exec(t.Context(), `UPDATE sso_connections SET saml_metadata_fetched_at = now() - interval '2 days',
		saml_metadata_next_refresh_at = now() - interval '1 day' WHERE id = $1`, c.ID); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	acs, form := s.samlLogin(b, "carol@acme.test", "carol", "carol-password")
	s.exchange(b.Post(t, acs, form))
	if fetches.Load() != 1 {
		t.Fatalf("the metadata was fetched %d times", fetches.Load())
	}

	// The worker's refreshes failed, and the stored metadata expired meanwhile.
	if _, err := s.db.Pool().Exec(t.Context(), `UPDATE sso_connections SET saml_idp_metadata_xml = $2,
		saml_metadata_refresh_failed_at = now(), saml_metadata_refresh_error = 'the metadata URL could not be fetched: the host was not found'
		WHERE id = $1`, c.ID, expired(idp.Metadata())); err != nil {
		t.Fatal(err)
	}
	got := decode[ssoConnectionJSON](t, s.bearer("GET", "/api/v1/admin/sso/connections/"+c.ID, s.adminA, nil), 200)
	if got.SAML.MetadataRefreshError == nil || got.SAML.MetadataRefreshError.Detail != "the metadata URL could not be fetched: the host was not found" {
		t.Fatalf("refresh error %+v", got.SAML.MetadataRefreshError)
	}
	p := wantProblem(t, s.do("POST", "/api/v1/auth/sso/start", "", map[string]any{"email": "carol@acme.test"}), http.StatusBadGateway, bgcheck.CodeSSOUnavailable)
	if !strings.Contains(p.Detail, "validUntil") || !strings.Contains(p.Detail, "the host was not found") || fetches.Load() != 1 {
		t.Fatalf("detail %q; %d fetches", p.Detail, fetches.Load())
	}
}
