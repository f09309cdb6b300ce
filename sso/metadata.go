package sso

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/crewjam/saml"
	xrv "github.com/mattermost/xml-roundtrip-validator"
)

// MaxMetadataBytes bounds IdP metadata, pasted or fetched. Real metadata of one IdP is a few
// kilobytes; federation aggregates of thousands of entities are not what a connection wants.
const MaxMetadataBytes = 512 << 10

// MetadataRefreshInterval is how old fetched metadata may grow before it is fetched again,
// unless its cacheDuration or validUntil asks for sooner.
const MetadataRefreshInterval = 24 * time.Hour

// MinMetadataRefreshInterval bounds how soon after a fetch metadata is fetched again, whatever
// its cacheDuration or validUntil say: an IdP cannot make us poll it in a loop.
const MinMetadataRefreshInterval = 5 * time.Minute

// metadataExpiryMargin is how long before its validUntil metadata is fetched again, so a
// sign-in does not meet it expired while the IdP already publishes the next.
const metadataExpiryMargin = time.Hour

// maxRefreshBackoff is the longest wait between failed refreshes.
const maxRefreshBackoff = 6 * time.Hour

// IdPMetadata is what a connection needs from an identity provider's SAML metadata.
type IdPMetadata struct {
	EntityID string
	// SSOURL is the IdP's HTTP-Redirect single sign-on service, where AuthnRequests go.
	SSOURL string
	// ValidUntil is the metadata's validUntil, or zero when it states none.
	ValidUntil time.Time
	// CacheDuration is how long the IdP says the metadata may be kept before it is fetched
	// again, or zero when it states none.
	CacheDuration time.Duration
	// SigningCerts are the certificates assertions may be signed with (several during a
	// rotation).
	SigningCerts []*x509.Certificate

	descriptor *saml.EntityDescriptor
}

// ParseIdPMetadata reads an IdP's metadata: an EntityDescriptor, or an EntitiesDescriptor that
// holds exactly one IdP. It must name an entity id, an HTTP-Redirect SSO service and at least
// one signing certificate. The SSO service must be https, or plain http to an address in allowed
// (as OIDC endpoints must). Its errors are *MetadataError.
func ParseIdPMetadata(raw []byte, allowed []netip.Prefix) (*IdPMetadata, error) {
	if len(raw) > MaxMetadataBytes {
		return nil, metadataError(nil, "the metadata is larger than %d bytes", MaxMetadataBytes)
	}
	if err := xrv.Validate(bytes.NewReader(raw)); err != nil {
		return nil, metadataError(err, "the metadata is not well-formed XML")
	}
	var ed saml.EntityDescriptor
	switch rootElement(raw) {
	case "EntityDescriptor":
		if err := xml.Unmarshal(raw, &ed); err != nil {
			return nil, metadataError(err, "the metadata cannot be read as a SAML EntityDescriptor")
		}
	case "EntitiesDescriptor":
		var eds saml.EntitiesDescriptor
		if err := xml.Unmarshal(raw, &eds); err != nil {
			return nil, metadataError(err, "the metadata cannot be read as a SAML EntitiesDescriptor")
		}
		var idps []saml.EntityDescriptor
		for _, e := range eds.EntityDescriptors {
			if len(e.IDPSSODescriptors) > 0 {
				idps = append(idps, e)
			}
		}
		if len(idps) != 1 {
			return nil, metadataError(nil, "the metadata describes %d identity providers; give the metadata of exactly one", len(idps))
		}
		ed = idps[0]
	default:
		return nil, metadataError(nil, "the document is not SAML metadata (an EntityDescriptor)")
	}
	if ed.EntityID == "" {
		return nil, metadataError(nil, "the metadata names no entityID")
	}
	if len(ed.IDPSSODescriptors) == 0 {
		return nil, metadataError(nil, "the metadata has no IDPSSODescriptor: it is not an identity provider's metadata")
	}
	md := &IdPMetadata{EntityID: ed.EntityID, ValidUntil: ed.ValidUntil, CacheDuration: ed.CacheDuration, descriptor: &ed}
	for _, d := range ed.IDPSSODescriptors {
		for _, s := range d.SingleSignOnServices {
			if s.Binding == saml.HTTPRedirectBinding && md.SSOURL == "" {
				md.SSOURL = s.Location
			}
		}
		for _, kd := range d.KeyDescriptors {
			if kd.Use != "" && kd.Use != "signing" {
				continue
			}
			for _, c := range kd.KeyInfo.X509Data.X509Certificates {
				der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(c.Data), ""))
				if err != nil {
					return nil, metadataError(err, "the metadata has a signing certificate that is not base64")
				}
				cert, err := x509.ParseCertificate(der)
				if err != nil {
					return nil, metadataError(err, "the metadata has a signing certificate that cannot be parsed as X.509")
				}
				md.SigningCerts = append(md.SigningCerts, cert)
			}
		}
	}
	if md.SSOURL == "" {
		return nil, metadataError(nil, "the metadata offers no SingleSignOnService with the HTTP-Redirect binding")
	}
	// The browser carries the AuthnRequest there and signs in there: over plain http anyone on
	// the way could read or change both, so only an IdP on the operator's own networks may use it.
	if u, err := url.Parse(md.SSOURL); err != nil || u.Host == "" || u.Scheme != "https" && !(u.Scheme == "http" && PlainHTTPAllowed(u, allowed)) {
		return nil, metadataError(err, "the metadata's SingleSignOnService must be an https URL "+
			"(plain http only to an address in BGCHECK_SSO_PRIVATE_NETWORKS)")
	}
	if len(md.SigningCerts) == 0 {
		return nil, metadataError(nil, "the metadata has no signing certificate")
	}
	return md, nil
}

// CheckCurrent refuses metadata whose validUntil has passed at now: the IdP says it may no
// longer be relied on, whatever keys it names.
func (m *IdPMetadata) CheckCurrent(now time.Time) error {
	if !m.ValidUntil.IsZero() && !now.Before(m.ValidUntil) {
		return metadataError(nil, "the metadata expired: its validUntil, %s, has passed; the IdP must publish current metadata",
			m.ValidUntil.UTC().Format(time.RFC3339))
	}
	return nil
}

// NextRefresh is when metadata fetched at fetchedAt is to be fetched again: a day later, or
// sooner at its cacheDuration, or an hour before its validUntil; never sooner than
// MinMetadataRefreshInterval after the fetch.
func (m *IdPMetadata) NextRefresh(fetchedAt time.Time) time.Time {
	next := fetchedAt.Add(MetadataRefreshInterval)
	if m.CacheDuration > 0 && fetchedAt.Add(m.CacheDuration).Before(next) {
		next = fetchedAt.Add(m.CacheDuration)
	}
	if !m.ValidUntil.IsZero() && m.ValidUntil.Add(-metadataExpiryMargin).Before(next) {
		next = m.ValidUntil.Add(-metadataExpiryMargin)
	}
	if earliest := fetchedAt.Add(MinMetadataRefreshInterval); next.Before(earliest) {
		next = earliest
	}
	return next
}

// RefreshBackoff is how long after the failures-th failed refresh in a row the next is tried:
// five minutes, doubling, up to six hours.
func RefreshBackoff(failures int) time.Duration {
	wait := MinMetadataRefreshInterval
	for i := 1; i < failures && wait < maxRefreshBackoff; i++ {
		wait *= 2
	}
	return min(wait, maxRefreshBackoff)
}

// FetchIdPMetadata fetches an IdP's metadata from url and reads it as ParseIdPMetadata does,
// refusing metadata already past its validUntil at now. Its errors are *MetadataError.
func FetchIdPMetadata(ctx context.Context, client *http.Client, url string, allowed []netip.Prefix, now time.Time) ([]byte, *IdPMetadata, error) {
	raw, err := FetchMetadata(ctx, client, url)
	if err != nil {
		return nil, nil, err
	}
	md, err := ParseIdPMetadata(raw, allowed)
	if err == nil {
		err = md.CheckCurrent(now)
	}
	if err != nil {
		return nil, nil, err
	}
	return raw, md, nil
}

// rootElement is the local name of the document's first element in the SAML metadata
// namespace, or "".
func rootElement(raw []byte) string {
	d := xml.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Space != "urn:oasis:names:tc:SAML:2.0:metadata" {
				return ""
			}
			return se.Name.Local
		}
	}
}
