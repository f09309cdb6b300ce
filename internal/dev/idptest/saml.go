package idptest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/xml"
	"html/template"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/crewjam/saml/samlidp"
	dsig "github.com/russellhaering/goxmldsig"
)

// SAMLIdP is crewjam/saml's samlidp on a local port: users, service providers and IdP-initiated
// shortcuts are added through its REST API, and people sign in through its login form.
// Assertions and responses are signed with RSA-SHA256.
type SAMLIdP struct {
	// URL is the IdP's base; its metadata is at URL/metadata.
	URL    string
	Server *samlidp.Server
	t      testing.TB
}

// loginForm posts an SP-initiated sign-in to /sso, where samlidp's default form (posting to
// /login) would stall since v0.5.0 (crewjam/saml#613); without a request it posts to /login,
// which only opens a session at the IdP.
var loginForm = template.Must(template.New("login").Parse(`<html><body><p>{{.Toast}}</p>
<form method="post" action="{{if .SAMLRequest}}/sso{{else}}{{.URL}}{{end}}">
<input type="text" name="user"><input type="password" name="password">
<input type="hidden" name="SAMLRequest" value="{{.SAMLRequest}}">
<input type="hidden" name="RelayState" value="{{.RelayState}}">
<input type="submit" value="Log in"></form></body></html>`))

// StartSAML runs an IdP until the test ends.
func StartSAML(t testing.TB) *SAMLIdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("http://" + ln.Addr().String())
	key, cert := selfSigned(t, base.Host)
	idp, err := samlidp.New(samlidp.Options{URL: *base, Key: key, Certificate: cert, Store: &samlidp.MemoryStore{},
		Logger: log.New(io.Discard, "", 0), LoginFormTemplate: loginForm})
	if err != nil {
		t.Fatal(err)
	}
	idp.IDP.SignatureMethod = dsig.RSASHA256SignatureMethod
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: idp}}
	srv.Start()
	t.Cleanup(srv.Close)
	return &SAMLIdP{URL: base.String(), Server: idp, t: t}
}

func selfSigned(t testing.TB, host string) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func (p *SAMLIdP) put(path string, body []byte) {
	p.t.Helper()
	req, err := http.NewRequest(http.MethodPut, p.URL+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(res.Body)
		p.t.Fatalf("PUT %s: %s %s", path, res.Status, msg)
	}
}

// AddUser adds a person who signs in as name with password; the IdP asserts email.
func (p *SAMLIdP) AddUser(name, password, email string) {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "password": password, "email": email,
		"common_name": name + " Tester", "given_name": name, "surname": "Tester"})
	p.put("/users/"+name, body)
}

// AddServiceProvider trusts a service provider by its metadata.
func (p *SAMLIdP) AddServiceProvider(id string, metadata []byte) {
	p.t.Helper()
	p.put("/services/"+id, metadata)
}

// AddShortcut makes GET /login/{name} an IdP-initiated sign-in to the service provider.
func (p *SAMLIdP) AddShortcut(name, entityID string) {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "service_provider": entityID})
	p.put("/shortcuts/"+name, body)
}

// AddShortcutWithRelayState is AddShortcut whose response carries relayState, as IdPs that
// name a landing page (a "default relay state") send.
func (p *SAMLIdP) AddShortcutWithRelayState(name, entityID, relayState string) {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "service_provider": entityID, "relay_state": relayState})
	p.put("/shortcuts/"+name, body)
}

// Metadata is the IdP's metadata document.
func (p *SAMLIdP) Metadata() []byte {
	p.t.Helper()
	out, err := xml.MarshalIndent(p.Server.IDP.Metadata(), "", "  ")
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// SignInIdPInitiated signs user in at the IdP and follows its shortcut: the IdP answers with
// the auto-posting form of an unsolicited response, returned here unposted.
func (p *SAMLIdP) SignInIdPInitiated(t testing.TB, b *Browser, shortcut, user, password string) (acs string, form url.Values) {
	t.Helper()
	login := b.Get(t, p.URL+"/login/"+shortcut)
	if session := b.Submit(t, login, map[string]string{"user": user, "password": password}); session.Status != http.StatusOK {
		t.Fatalf("IdP sign-in: %d %s", session.Status, session.Body)
	}
	action, values := b.Get(t, p.URL+"/login/"+shortcut).Form(t)
	if values.Get("SAMLResponse") == "" {
		t.Fatal("the IdP did not answer with a SAMLResponse")
	}
	return action.String(), values
}
