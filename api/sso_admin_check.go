package api

import (
	"context"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/sso"
)

// maxSSODomains bounds the domains one connection owns.
const maxSSODomains = 20

// ssoConnectionRequest is the body of a create (every field it needs) or an update (only what
// changes).
type ssoConnectionRequest struct {
	Protocol        *string   `json:"protocol"`
	Name            *string   `json:"name"`
	Enabled         *bool     `json:"enabled"`
	JITProvisioning *bool     `json:"jit_provisioning"`
	Domains         *[]string `json:"domains"`
	OIDC            *struct {
		Issuer       *string `json:"issuer"`
		ClientID     *string `json:"client_id"`
		ClientSecret *string `json:"client_secret"`
	} `json:"oidc"`
	SAML *struct {
		MetadataXML       *string `json:"metadata_xml"`
		MetadataURL       *string `json:"metadata_url"`
		AllowIdPInitiated *bool   `json:"allow_idp_initiated"`
	} `json:"saml"`
}

// checkedSSOConnection is a request after validation: what to store.
type checkedSSOConnection struct {
	protocol bgcheck.SSOProtocol
	update   postgres.SSOConnectionUpdate
}

// checkSSOConnection validates a create (existing nil) or an update of existing. It fetches and
// parses SAML metadata and runs OIDC discovery, so a connection that cannot work is refused
// with the reason, before anything is stored.
func (s *Server) checkSSOConnection(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection) (*checkedSSOConnection, error) {
	var v validator
	out := &checkedSSOConnection{}
	u := &out.update
	switch {
	case existing != nil:
		out.protocol = existing.Protocol
		if req.Protocol != nil && *req.Protocol != string(existing.Protocol) {
			v.add("protocol", "cannot change; create another connection")
		}
	case req.Protocol == nil:
		v.add("protocol", "is required: oidc or saml")
	case *req.Protocol == string(bgcheck.SSOProtocolOIDC) || *req.Protocol == string(bgcheck.SSOProtocolSAML):
		out.protocol = bgcheck.SSOProtocol(*req.Protocol)
	default:
		v.add("protocol", "must be oidc or saml")
	}
	if req.Name != nil {
		v.maxLen("name", *req.Name, maxNameLength)
		u.Name = req.Name
	}
	u.Enabled, u.JITProvisioning = req.Enabled, req.JITProvisioning
	if req.Domains != nil {
		domains, msg := normalizeDomains(*req.Domains)
		v.check("domains", msg)
		u.Domains = &domains
	} else if existing == nil {
		v.add("domains", "is required: the e-mail domains whose users sign in through this connection")
	}
	if out.protocol == bgcheck.SSOProtocolOIDC && req.SAML != nil || out.protocol == bgcheck.SSOProtocolSAML && req.OIDC != nil {
		v.add("protocol", "an "+string(out.protocol)+" connection takes only its own settings object")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	switch out.protocol {
	case bgcheck.SSOProtocolOIDC:
		return out, s.checkOIDCSettings(ctx, req, existing, u)
	case bgcheck.SSOProtocolSAML:
		return out, s.checkSAMLSettings(ctx, req, existing, u)
	}
	return out, nil
}

func (s *Server) checkOIDCSettings(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection, u *postgres.SSOConnectionUpdate) error {
	var v validator
	if req.OIDC == nil {
		if existing == nil {
			v.add("oidc", "is required: issuer, client_id and client_secret")
		}
		return v.err()
	}
	o := req.OIDC
	if o.Issuer != nil {
		v.check("oidc.issuer", s.checkIdPURL(*o.Issuer))
	} else if existing == nil {
		v.add("oidc.issuer", "is required")
	}
	for _, f := range []struct {
		name  string
		value *string
	}{{"oidc.client_id", o.ClientID}, {"oidc.client_secret", o.ClientSecret}} {
		switch {
		case f.value == nil && existing == nil:
			v.add(f.name, "is required")
		case f.value != nil && (*f.value == "" || len(*f.value) > 1024):
			v.add(f.name, "must be 1 to 1024 characters")
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	u.OIDCIssuer, u.OIDCClientID, u.OIDCClientSecret = o.Issuer, o.ClientID, o.ClientSecret
	if o.Issuer != nil {
		if _, err := s.oidc.Discover(ctx, *o.Issuer); err != nil {
			// The library's words may quote what the address answered: logged, not echoed.
			contextLogger(ctx).Info("SSO: OIDC discovery failed", "issuer", *o.Issuer, "err", err)
			msg := "discovery failed: the issuer must serve /.well-known/openid-configuration naming itself exactly, with https endpoints"
			if sso.IsConnectionFailure(err) {
				msg = "discovery failed: the issuer could not be reached: " + sso.ConnectionProblem(err)
			}
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "oidc.issuer", Message: msg})
		}
	}
	return nil
}

func (s *Server) checkSAMLSettings(ctx context.Context, req *ssoConnectionRequest, existing *bgcheck.SSOConnection, u *postgres.SSOConnectionUpdate) error {
	var v validator
	if req.SAML == nil {
		if existing == nil {
			v.add("saml", "is required: metadata_xml or metadata_url")
		}
		return v.err()
	}
	m := req.SAML
	u.SAMLAllowIdPInitiated = m.AllowIdPInitiated
	switch {
	case m.MetadataXML != nil && m.MetadataURL != nil:
		return bgcheck.ValidationError(bgcheck.FieldError{Field: "saml", Message: "give metadata_xml or metadata_url, not both"})
	case m.MetadataXML == nil && m.MetadataURL == nil:
		if existing == nil {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: "saml", Message: "metadata_xml or metadata_url is required"})
		}
		return nil
	}
	field, raw := "saml.metadata_xml", []byte(nil)
	if m.MetadataURL != nil {
		field = "saml.metadata_url"
		if msg := s.checkIdPURL(*m.MetadataURL); msg != "" {
			return bgcheck.ValidationError(bgcheck.FieldError{Field: field, Message: msg})
		}
		body, err := sso.FetchMetadata(ctx, s.ssoClient, *m.MetadataURL)
		if err != nil {
			return s.metadataRefused(ctx, field, err)
		}
		raw, u.SAMLIdPMetadataURL = body, m.MetadataURL
	} else {
		raw = []byte(*m.MetadataXML)
		empty := ""
		u.SAMLIdPMetadataURL = &empty
	}
	md, err := sso.ParseIdPMetadata(raw, s.opts.SSOPrivateNetworks)
	if err == nil {
		err = md.CheckCurrent(time.Now())
	}
	if err != nil {
		return s.metadataRefused(ctx, field, err)
	}
	xml, entity := string(raw), md.EntityID
	u.SAMLIdPMetadataXML, u.SAMLIdPEntityID = &xml, &entity
	if !md.ValidUntil.IsZero() {
		u.SAMLMetadataValidUntil = &md.ValidUntil
	}
	if m.MetadataURL != nil {
		next := md.NextRefresh(time.Now())
		u.SAMLMetadataNextRefresh = &next
	}
	return nil
}

// metadataRefused is a validation error on field that says in our words why the metadata was
// refused; the libraries' words, which can name the resolver or quote the document, are logged
// with the request id.
func (s *Server) metadataRefused(ctx context.Context, field string, err error) error {
	contextLogger(ctx).Info("SSO: SAML metadata refused", "field", field, "err", err)
	return bgcheck.ValidationError(bgcheck.FieldError{Field: field, Message: sso.ReasonOf(err)})
}

// checkIdPURL accepts an https URL, or plain http only to an address in the networks the
// operator named for identity providers (BGCHECK_SSO_PRIVATE_NETWORKS): a token or assertion
// must not cross the internet in the clear.
func (s *Server) checkIdPURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "must be an absolute https URL"
	}
	if u.Scheme == "http" {
		addr, err := netip.ParseAddr(u.Hostname())
		if err != nil || !prefixesContain(s.opts.SSOPrivateNetworks, addr) {
			return "must be https (plain http only to an address in BGCHECK_SSO_PRIVATE_NETWORKS)"
		}
	}
	return ""
}

func prefixesContain(ps []netip.Prefix, addr netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// normalizeDomains lowercases and deduplicates e-mail domains and checks each is a host name
// with a dot; the message is "" when all are good.
func normalizeDomains(in []string) ([]string, string) {
	if len(in) == 0 || len(in) > maxSSODomains {
		return nil, "must list 1 to 20 e-mail domains"
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if !validDomain(d) {
			return nil, "must be e-mail domains such as example.com (" + d + " is not one)"
		}
		if publicMailDomains[d] {
			return nil, d + " is a public e-mail service: only an organization's own domain can send its users to its identity provider"
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, ""
}

// publicMailDomains are mail services anyone can have an address at: no connection may claim
// them (nor could it prove them in DNS).
var publicMailDomains = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "outlook.com": true, "hotmail.com": true, "live.com": true,
	"msn.com": true, "yahoo.com": true, "ymail.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"aol.com": true, "proton.me": true, "protonmail.com": true, "pm.me": true, "gmx.com": true, "gmx.net": true,
	"mail.com": true, "yandex.com": true, "yandex.ru": true, "zoho.com": true, "fastmail.com": true, "hey.com": true,
	"qq.com": true, "163.com": true, "web.de": true, "tutanota.com": true,
}

func validDomain(d string) bool {
	if len(d) > 253 || !strings.Contains(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
