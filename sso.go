package bgcheck

import "time"

// SSOProtocol is how a connection talks to its identity provider.
type SSOProtocol string

// The two protocols an account may connect with: one connection of each at most.
const (
	SSOProtocolOIDC SSOProtocol = "oidc"
	SSOProtocolSAML SSOProtocol = "saml"
)

// PrefixSSOConnection starts every SSO connection id.
const PrefixSSOConnection = "ssoc"

// SSOConnection is an account's single sign-on with its corporate identity provider (IdP), for
// admin users. The OIDC client secret is never part of it: storage opens it only for the sign-in
// that needs it.
type SSOConnection struct {
	ID              string      `json:"id"`
	AccountID       string      `json:"-"`
	Protocol        SSOProtocol `json:"protocol"`
	Name            string      `json:"name"`
	Enabled         bool        `json:"enabled"`
	JITProvisioning bool        `json:"jit_provisioning"`
	// Domains are every e-mail domain the connection claims; DomainClaims say which are verified.
	Domains      []string    `json:"domains"`
	DomainClaims []SSODomain `json:"-"`

	OIDCIssuer          string `json:"-"`
	OIDCClientID        string `json:"-"`
	OIDCClientSecretSet bool   `json:"-"`

	SAMLIdPEntityID       string     `json:"-"`
	SAMLIdPMetadataXML    string     `json:"-"`
	SAMLIdPMetadataURL    string     `json:"-"`
	SAMLMetadataFetchedAt *time.Time `json:"-"`
	SAMLMetadataValidTill *time.Time `json:"-"`
	SAMLAllowIdPInitiated bool       `json:"-"`
	// SAMLMetadataNextRefresh is when metadata from a URL is next fetched in the background;
	// the refresh fields say what the last attempt that failed said, in our words, until one
	// succeeds.
	SAMLMetadataNextRefresh     *time.Time `json:"-"`
	SAMLMetadataRefreshFailedAt *time.Time `json:"-"`
	SAMLMetadataRefreshError    *string    `json:"-"`

	LastSignInAt   *time.Time `json:"last_sign_in_at"`
	LastTestAt     *time.Time `json:"-"`
	LastTestOK     *bool      `json:"-"`
	LastTestDetail *string    `json:"-"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// SSODomain is an e-mail domain a connection claims. It routes sign-ins, and vouches for the
// e-mails an identity provider sends, only once the account proved it holds the domain's DNS:
// the TXT record SSODomainRecordName(domain) holding SSODomainRecordValue(token).
type SSODomain struct {
	Domain     string
	Token      string
	VerifiedAt *time.Time
}

// SSODomainRecordName is where the TXT record that proves a domain is looked up.
func SSODomainRecordName(domain string) string { return "_bgcheck-challenge." + domain }

// SSODomainRecordValue is the TXT record's text for a claim's token.
func SSODomainRecordValue(token string) string { return "bgcheck-domain-verification=" + token }

// VerifiedDomain reports whether the connection owns domain (lowercase) after proving it.
func (c *SSOConnection) VerifiedDomain(domain string) bool {
	for _, d := range c.DomainClaims {
		if d.Domain == domain && d.VerifiedAt != nil {
			return true
		}
	}
	return false
}

// VerifiedDomains lists the domains the connection proved.
func (c *SSOConnection) VerifiedDomains() []string {
	var out []string
	for _, d := range c.DomainClaims {
		if d.VerifiedAt != nil {
			out = append(out, d.Domain)
		}
	}
	return out
}

// SSOIdentity is who an identity provider says signed in, after every check of its answer:
// the subject is the IdP's stable id for the person under this connection.
type SSOIdentity struct {
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// SSOEnforcement is an account's rule for its admins' sign-in: when Required, password sign-in
// is refused to every admin but the break-glass one, who keeps a way in if the IdP is down.
type SSOEnforcement struct {
	Required         bool    `json:"required"`
	BreakGlassUserID *string `json:"break_glass_user_id"`
}
