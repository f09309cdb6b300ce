package sso

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	xrv "github.com/mattermost/xml-roundtrip-validator"
	dsig "github.com/russellhaering/goxmldsig"
	"github.com/russellhaering/goxmldsig/etreeutils"

	"github.com/bgcheck/bgcheck"
)

// SAMLConfig is one connection's service-provider settings: our side (entity id, where
// responses are posted, where our metadata is) and the IdP's metadata.
type SAMLConfig struct {
	EntityID          string
	ACSURL            string
	MetadataURL       string
	IdP               *IdPMetadata
	AllowIdPInitiated bool
}

// MaxResponseBytes bounds a SAMLResponse after base64 decoding.
const MaxResponseBytes = 256 << 10

// acceptedSignatureMethods are the assertion signatures we verify: RSA and ECDSA over SHA-256
// or stronger. SHA-1 signatures are refused, whatever the IdP's default.
var acceptedSignatureMethods = map[string]bool{
	dsig.RSASHA256SignatureMethod: true, dsig.RSASHA384SignatureMethod: true, dsig.RSASHA512SignatureMethod: true,
	dsig.ECDSASHA256SignatureMethod: true, dsig.ECDSASHA384SignatureMethod: true, dsig.ECDSASHA512SignatureMethod: true,
}

// acceptedDigestMethods are the digests a signed assertion's reference may use.
var acceptedDigestMethods = map[string]bool{
	"http://www.w3.org/2001/04/xmlenc#sha256":       true,
	"http://www.w3.org/2001/04/xmldsig-more#sha384": true,
	"http://www.w3.org/2001/04/xmlenc#sha512":       true,
}

// The SAML namespaces.
const (
	nsAssertion = "urn:oasis:names:tc:SAML:2.0:assertion"
	nsProtocol  = "urn:oasis:names:tc:SAML:2.0:protocol"
	nsDSig      = "http://www.w3.org/2000/09/xmldsig#"
)

// SAML is the service provider of one connection, for one request: not for concurrent use.
type SAML struct {
	cfg SAMLConfig
	sp  *saml.ServiceProvider
}

// NewSAML returns the service provider of cfg; without cfg.IdP it can only write our metadata. We hold no SP key: AuthnRequests go unsigned
// (over TLS, with a single-use RelayState), and our metadata offers no encryption key, so
// assertions come signed and in the clear.
func NewSAML(cfg SAMLConfig) (*SAML, error) {
	acs, err := url.Parse(cfg.ACSURL)
	if err != nil {
		return nil, err
	}
	md, err := url.Parse(cfg.MetadataURL)
	if err != nil {
		return nil, err
	}
	var idp *saml.EntityDescriptor
	if cfg.IdP != nil {
		idp = cfg.IdP.descriptor
	}
	return &SAML{cfg: cfg, sp: &saml.ServiceProvider{
		EntityID:          cfg.EntityID,
		AcsURL:            *acs,
		MetadataURL:       *md,
		IDPMetadata:       idp,
		AuthnNameIDFormat: saml.UnspecifiedNameIDFormat,
	}}, nil
}

// Metadata is our service provider's metadata, for the IdP's administrator. It advertises the
// one binding our ACS speaks (HTTP-POST; crewjam adds HTTP-Artifact, which we do not resolve)
// and no validUntil: crewjam's default of two days from now would make an IdP that loaded the
// document once consider it expired on the third day, while these values never change.
func (s *SAML) Metadata() ([]byte, error) {
	ed := s.sp.Metadata()
	for i := range ed.SPSSODescriptors {
		d := &ed.SPSSODescriptors[i]
		d.ValidUntil = nil
		var acs []saml.IndexedEndpoint
		for _, e := range d.AssertionConsumerServices {
			if e.Binding == saml.HTTPPostBinding {
				e.Index = len(acs) + 1
				acs = append(acs, e)
			}
		}
		d.AssertionConsumerServices = acs
	}
	out, err := xml.Marshal(ed)
	if err != nil {
		return nil, err
	}
	// The EntityDescriptor's validUntil is a time.Time that marshals even when zero.
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(out); err != nil {
		return nil, err
	}
	doc.Root().RemoveAttr("validUntil")
	doc.Indent(2)
	body, err := doc.WriteToBytes()
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), body...), nil
}

// AuthnRequestURL returns where the browser goes to sign in (the HTTP-Redirect binding) and
// the request's id, which the response must answer. relayState must be URL-safe.
func (s *SAML) AuthnRequestURL(relayState string) (redirect, requestID string, err error) {
	req, err := s.sp.MakeAuthenticationRequest(s.cfg.IdP.SSOURL, saml.HTTPRedirectBinding, saml.HTTPPostBinding)
	if err != nil {
		return "", "", err
	}
	u, err := req.Redirect(relayState, s.sp)
	if err != nil {
		return "", "", err
	}
	return u.String(), req.ID, nil
}

// Assertion is what a verified SAML response says.
type Assertion struct {
	ID       string
	Identity bgcheck.SSOIdentity
	// Until is when the assertion can no longer be accepted anyway: the replay cache may
	// forget its id then.
	Until time.Time
}

// ParseResponse verifies a base64 SAMLResponse posted to our ACS. requestIDs are the
// AuthnRequest ids it may answer (none for an IdP-initiated response, which only a connection
// that allows them accepts). Beyond crewjam's checks (signature, destination, InResponseTo,
// issuer, audience, time windows) it demands exactly one assertion, in the clear and itself
// signed with SHA-256 or stronger, and reads the subject from the signed bytes.
func (s *SAML) ParseResponse(samlResponse string, requestIDs []string, now time.Time) (a *Assertion, err error) {
	defer func() {
		// crewjam/saml up to v0.5.1 can panic on a response without an Issuer (GO-2026-6909).
		if p := recover(); p != nil {
			a, err = nil, refuse("the SAML response is malformed", fmt.Errorf("%v", p))
		}
	}()
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(samlResponse), ""))
	if err != nil {
		return nil, refuse("the SAMLResponse is not base64", nil)
	}
	if len(raw) > MaxResponseBytes {
		return nil, refuse("the SAML response is too large", nil)
	}
	if err := xrv.Validate(bytes.NewReader(raw)); err != nil {
		return nil, refuse("the SAML response is not well-formed XML", err)
	}
	signed, err := s.verifiedAssertion(raw)
	if err != nil {
		return nil, err
	}
	acs, _ := url.Parse(s.cfg.ACSURL)
	if len(requestIDs) == 0 && !s.cfg.AllowIdPInitiated {
		return nil, refuse("IdP-initiated sign-in is off for this connection: start from the dashboard", nil)
	}
	// crewjam checks no InResponseTo once unsolicited responses are allowed: one that answers
	// an AuthnRequest of ours must come back through that request's RelayState, not as if the
	// IdP had started it.
	if len(requestIDs) == 0 && (signed.inResponseTo != "" || responseInResponseTo(raw) != "") {
		return nil, refuse("the response answers a sign-in started here, not one the IdP started: start again from the sign-in page", nil)
	}
	// InResponseTo is checked unless this is an unsolicited response the connection accepts.
	s.sp.AllowIDPInitiated = len(requestIDs) == 0
	assertion, err := s.sp.ParseXMLResponse(raw, requestIDs, *acs)
	if err != nil {
		var ire *saml.InvalidResponseError
		if ok := asInvalid(err, &ire); ok {
			err = ire.PrivateErr
		}
		return nil, refuse(samlReason(err), err)
	}
	if assertion.ID != signed.id {
		return nil, refuse("the accepted assertion is not the signed one", nil)
	}
	nameID := ""
	if assertion.Subject != nil && assertion.Subject.NameID != nil {
		nameID = assertion.Subject.NameID.Value
	}
	if nameID != signed.nameID {
		return nil, refuse("the assertion's NameID differs from the signed one", nil)
	}
	// crewjam checks an AudienceRestriction only when there is one: an assertion meant for any
	// service provider is not one meant for us.
	if assertion.Conditions == nil || len(assertion.Conditions.AudienceRestrictions) == 0 {
		return nil, refuse("the assertion has no AudienceRestriction: the IdP must name this application's entity id as its audience", nil)
	}
	id := identityOf(assertion, signed)
	if id.Subject == "" {
		return nil, refuse("the assertion names no subject", nil)
	}
	until := assertion.IssueInstant.Add(saml.MaxIssueDelay)
	if t := assertion.Conditions.NotOnOrAfter.Add(saml.MaxClockSkew); t.After(until) {
		until = t
	}
	if until.Before(now) {
		until = now.Add(saml.MaxIssueDelay)
	}
	return &Assertion{ID: assertion.ID, Identity: id, Until: until}, nil
}

// samlReasons name, in our words, why crewjam refused a response; its own words, which quote
// values from the response, go only to the log.
var samlReasons = []struct{ marker, reason string }{
	{"expired", "the SAML response has expired: check that the IdP's clock is right, and sign in again"},
	{"not yet valid", "the SAML assertion is not valid yet: check that the IdP's clock is right"},
	{"AudienceRestriction", "the assertion's AudienceRestriction is not our SP entity id: the IdP has this application's entity id wrong"},
	{"audience restriction", "the assertion's AudienceRestriction is not our SP entity id: the IdP has this application's entity id wrong"},
	{"Destination", "the response's Destination is not our ACS URL: the IdP has this application's ACS URL wrong"},
	{"Recipient", "the assertion's SubjectConfirmation Recipient is not our ACS URL"},
	{"InResponseTo", "the response answers another sign-in: start again from the sign-in page"},
	{"SubjectConfirmation one of", "the response answers another sign-in: start again from the sign-in page"},
	{"Issuer", "the response's Issuer is not the connection's identity provider"},
	{"issuer", "the response's Issuer is not the connection's identity provider"},
	{"signature", "the SAML response's signature is not valid"},
}

func samlReason(err error) string {
	msg := err.Error()
	for _, r := range samlReasons {
		if strings.Contains(msg, r.marker) {
			return r.reason
		}
	}
	return "the SAML response is not valid"
}

func asInvalid(err error, target **saml.InvalidResponseError) bool {
	ire, ok := err.(*saml.InvalidResponseError)
	if ok {
		*target = ire
	}
	return ok
}

// signedAssertion is what the assertion's own signature covers, read by us.
type signedAssertion struct {
	id           string
	nameID       string
	nameIDFormat string
	// inResponseTo is the AuthnRequest a SubjectConfirmationData names, if any.
	inResponseTo string
}

// Unsolicited reports whether a base64 SAMLResponse says it answers no request (it has no
// InResponseTo): an IdP-initiated sign-in. It verifies nothing; it tells the ACS whether to look
// for a sign-in of ours, and ParseResponse holds the response to what it claims.
func Unsolicited(samlResponse string) bool {
	raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(samlResponse), ""))
	if err != nil || len(raw) > MaxResponseBytes {
		return false
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil || doc.Root() == nil || doc.Root().Tag != "Response" {
		return false
	}
	return responseInResponseTo(raw) == ""
}

// responseInResponseTo is the InResponseTo of a Response document's root, or "".
func responseInResponseTo(raw []byte) string {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil || doc.Root() == nil {
		return ""
	}
	return doc.Root().SelectAttrValue("InResponseTo", "")
}

// verifiedAssertion finds the response's one assertion and checks its own signature against
// the IdP's signing certificates, whatever the Response's signature says.
func (s *SAML) verifiedAssertion(raw []byte) (*signedAssertion, error) {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil || doc.Root() == nil {
		return nil, refuse("the SAML response cannot be parsed", err)
	}
	root := doc.Root()
	if root.Tag != "Response" || root.NamespaceURI() != nsProtocol {
		return nil, refuse("the posted document is not a SAML Response", nil)
	}
	var assertions []*etree.Element
	for _, c := range root.ChildElements() {
		switch {
		case c.Tag == "EncryptedAssertion" && c.NamespaceURI() == nsAssertion:
			return nil, refuse("encrypted assertions are not accepted: our metadata offers no encryption key, so turn encryption off for this application", nil)
		case c.Tag == "Assertion" && c.NamespaceURI() == nsAssertion:
			assertions = append(assertions, c)
		}
	}
	if len(assertions) != 1 {
		return nil, refuse(fmt.Sprintf("the SAML response holds %d assertions; exactly one is accepted", len(assertions)), nil)
	}
	el := assertions[0]
	var sig *etree.Element
	for _, c := range el.ChildElements() {
		if c.Tag == "Signature" && c.NamespaceURI() == nsDSig {
			sig = c
		}
	}
	if sig == nil {
		return nil, refuse("the assertion is not signed: configure the IdP to sign assertions", nil)
	}
	method := ""
	if m := sig.FindElement("./SignedInfo/SignatureMethod"); m != nil {
		method = m.SelectAttrValue("Algorithm", "")
	}
	if !acceptedSignatureMethods[method] {
		return nil, refuse(fmt.Sprintf("the assertion is signed with %q; RSA-SHA256 or stronger is required", method), nil)
	}
	// The signature covers a digest of the assertion: a SHA-1 digest would let a collision stand
	// in for it, however strong the signature over the digest.
	for _, d := range sig.FindElements("./SignedInfo/Reference/DigestMethod") {
		if alg := d.SelectAttrValue("Algorithm", ""); !acceptedDigestMethods[alg] {
			return nil, refuse(fmt.Sprintf("the assertion's digest is %q; SHA-256 or stronger is required", alg), nil)
		}
	}
	ctx, err := etreeutils.NSBuildParentContext(el)
	if err == nil {
		ctx, err = ctx.SubContext(el)
	}
	var detached *etree.Element
	if err == nil {
		detached, err = etreeutils.NSDetatch(ctx, el)
	}
	if err != nil {
		return nil, refuse("the assertion cannot be read", err)
	}
	vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: s.cfg.IdP.SigningCerts})
	vc.IdAttribute = "ID"
	verified, err := vc.Validate(detached)
	if err != nil {
		return nil, refuse("the assertion's signature is not valid", err)
	}
	out := &signedAssertion{id: verified.SelectAttrValue("ID", "")}
	for _, subj := range verified.ChildElements() {
		if subj.Tag != "Subject" || subj.NamespaceURI() != nsAssertion {
			continue
		}
		for _, n := range subj.ChildElements() {
			if n.Tag == "NameID" && n.NamespaceURI() == nsAssertion {
				out.nameID = strings.TrimSpace(n.Text())
				out.nameIDFormat = n.SelectAttrValue("Format", "")
			}
			if n.Tag == "SubjectConfirmation" && n.NamespaceURI() == nsAssertion {
				for _, d := range n.ChildElements() {
					if d.Tag == "SubjectConfirmationData" && d.NamespaceURI() == nsAssertion && d.SelectAttrValue("InResponseTo", "") != "" {
						out.inResponseTo = d.SelectAttrValue("InResponseTo", "")
					}
				}
			}
		}
	}
	return out, nil
}

// emailAttributes are the attribute names an e-mail address comes under, in the order asked.
var emailAttributes = []string{
	"email", "mail", "emailaddress", "urn:oid:0.9.2342.19200300.100.1.3",
	"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
}

var nameAttributes = []string{
	"name", "displayname", "cn", "urn:oid:2.5.4.3", "urn:oid:2.16.840.1.113730.3.1.241",
	"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
}

// identityOf reads who signed in. The subject is the NameID, unless it is transient (new at
// every sign-in), when the e-mail stands in for it. An IdP vouches for the e-mails it asserts,
// so SAML e-mails count as verified; they must still lie in the connection's domains.
func identityOf(a *saml.Assertion, signed *signedAssertion) bgcheck.SSOIdentity {
	attr := func(names []string) string {
		for _, want := range names {
			for _, st := range a.AttributeStatements {
				for _, at := range st.Attributes {
					if (strings.EqualFold(at.Name, want) || strings.EqualFold(at.FriendlyName, want)) && len(at.Values) > 0 {
						if v := strings.TrimSpace(at.Values[0].Value); v != "" {
							return v
						}
					}
				}
			}
		}
		return ""
	}
	id := bgcheck.SSOIdentity{Subject: signed.nameID, Email: attr(emailAttributes), Name: attr(nameAttributes)}
	if id.Email == "" && signed.nameIDFormat == string(saml.EmailAddressNameIDFormat) {
		id.Email = signed.nameID
	}
	if signed.nameIDFormat == string(saml.TransientNameIDFormat) {
		// Prefixed, so that it can never equal a persistent NameID the IdP gives someone else.
		id.Subject = "email:" + strings.ToLower(id.Email)
	}
	id.EmailVerified = id.Email != ""
	return id
}
