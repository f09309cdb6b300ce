package sso

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"
)

const testCert = `MIIBkTCB+6ADAgECAgEBMA0GCSqGSIb3DQEBCwUAMA8xDTALBgNVBAMTBGlkcDEwHhcNMjYwMTAxMDAwMDAwWhcNMzYwMTAxMDAwMDAwWjAPMQ0wCwYDVQQDEwRpZHAxMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC7`

func idpMetadata(entityID, binding, keyInfo string) string {
	return `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="` + entityID + `">
  <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` + keyInfo + `
    <SingleSignOnService Binding="` + binding + `" Location="https://idp.example.com/sso"/>
  </IDPSSODescriptor>
</EntityDescriptor>`
}

func TestParseIdPMetadataRefusesWhatCannotWork(t *testing.T) {
	redirect := "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
	for _, tc := range []struct {
		name, xml, want string
	}{
		{"not metadata", `<html/>`, "is not SAML metadata"},
		{"not XML", `<EntityDescriptor`, "not well-formed"},
		{"no entity id", idpMetadata("", redirect, ""), "names no entityID"},
		{"an SP, not an IdP", `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><SPSSODescriptor/></EntityDescriptor>`, "no IDPSSODescriptor"},
		{"POST binding only", idpMetadata("https://idp.example.com", "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST", ""), "HTTP-Redirect"},
		{"no signing certificate", idpMetadata("https://idp.example.com", redirect, ""), "no signing certificate"},
		{"a certificate that is not one", idpMetadata("https://idp.example.com", redirect,
			`<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>`+testCert+`</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`), "cannot be parsed"},
		{"two IdPs in one aggregate", `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">` +
			idpMetadata("a", redirect, "") + idpMetadata("b", redirect, "") + `</EntitiesDescriptor>`, "describes 2 identity providers"},
		{"too large", `<x>` + strings.Repeat(" ", MaxMetadataBytes) + `</x>`, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseIdPMetadata([]byte(tc.xml), nil)
			if err == nil || !strings.Contains(ReasonOf(err), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			// The XML, base64 and X.509 parsers' own words stay out of what the admin reads.
			for _, leak := range []string{"XML syntax", "asn1", "x509:", "illegal base64", "unexpected EOF"} {
				if strings.Contains(ReasonOf(err), leak) {
					t.Fatalf("the reason %q repeats the library's %q", ReasonOf(err), leak)
				}
			}
		})
	}
}

func TestMetadataIsRefreshedDailyOrSooner(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		md    IdPMetadata
		after time.Duration
	}{
		{"no validUntil, no cacheDuration", IdPMetadata{}, 24 * time.Hour},
		{"a week's validity", IdPMetadata{ValidUntil: at.Add(7 * 24 * time.Hour)}, 24 * time.Hour},
		{"valid for ten more hours", IdPMetadata{ValidUntil: at.Add(10 * time.Hour)}, 9 * time.Hour},
		{"a cacheDuration of six hours", IdPMetadata{CacheDuration: 6 * time.Hour}, 6 * time.Hour},
		{"a cacheDuration longer than a day", IdPMetadata{CacheDuration: 72 * time.Hour}, 24 * time.Hour},
		{"a cacheDuration of a second", IdPMetadata{CacheDuration: time.Second}, 5 * time.Minute},
		{"valid for ten more minutes", IdPMetadata{ValidUntil: at.Add(10 * time.Minute)}, 5 * time.Minute},
	} {
		if got := tc.md.NextRefresh(at).Sub(at); got != tc.after {
			t.Errorf("%s: next refresh after %s, want %s", tc.name, got, tc.after)
		}
	}
}

func TestRefreshBackoffDoublesUpToSixHours(t *testing.T) {
	want := []time.Duration{5 * time.Minute, 5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute,
		160 * time.Minute, 320 * time.Minute, 6 * time.Hour, 6 * time.Hour}
	for failures, w := range want {
		if got := RefreshBackoff(failures); got != w {
			t.Errorf("after %d failures: %s, want %s", failures, got, w)
		}
	}
	if got := RefreshBackoff(1000); got != 6*time.Hour {
		t.Errorf("after 1000 failures: %s", got)
	}
}

func TestEmailVerifiedAsBoolOrString(t *testing.T) {
	for raw, want := range map[string]bool{`{"email_verified":true}`: true, `{"email_verified":"true"}`: true,
		`{"email_verified":false}`: false, `{"email_verified":"false"}`: false, `{}`: false} {
		var c profileClaims
		if err := json.Unmarshal([]byte(raw), &c); err != nil || bool(c.EmailVerified) != want {
			t.Errorf("%s: %v, %v", raw, c.EmailVerified, err)
		}
	}
}

// validCert is a self-signed certificate, base64 DER as metadata carries it.
func validCert(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

// The browser takes the AuthnRequest to the IdP's SSO service and signs in there: it must be
// https, unless the IdP is on a network the operator named (as for OIDC endpoints).
func TestParseIdPMetadataWantsAnHTTPSSignOnService(t *testing.T) {
	keyInfo := `<KeyDescriptor use="signing"><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>` +
		validCert(t) + `</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`
	withSSO := func(location string) []byte {
		return []byte(strings.Replace(idpMetadata("https://idp.example.com", "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect", keyInfo),
			"https://idp.example.com/sso", location, 1))
	}
	for _, tc := range []struct {
		location string
		allowed  []netip.Prefix
		ok       bool
	}{
		{"https://idp.example.com/sso", nil, true},
		{"http://idp.example.com/sso", nil, false},
		{"http://127.0.0.1:8080/sso", nil, false},
		{"http://127.0.0.1:8080/sso", loopback, true},
		{"http://idp.internal/sso", loopback, false}, // a name could resolve anywhere
	} {
		md, err := ParseIdPMetadata(withSSO(tc.location), tc.allowed)
		if tc.ok && (err != nil || md.SSOURL != tc.location) {
			t.Errorf("%s (allowed %v): %v", tc.location, tc.allowed, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(ReasonOf(err), "must be an https URL")) {
			t.Errorf("%s (allowed %v) accepted, or refused for another reason: %v", tc.location, tc.allowed, err)
		}
	}
}
