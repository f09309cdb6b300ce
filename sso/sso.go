// Package sso signs admin users in through their organization's identity provider: OpenID
// Connect with the authorization code flow (state, nonce and PKCE S256; coreos/go-oidc and
// x/oauth2), and SAML 2.0 as a service provider (crewjam/saml, with goxmldsig at v1.6.1 or
// newer). It speaks the protocols and checks every answer; which user an identity becomes, and
// what is stored, is the caller's business. Every URL it fetches goes through the HTTP client
// it is given, which the caller builds on package netguard's address guard.
package sso

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/netguard"
)

// FetchTimeout bounds every request to an identity provider: discovery, keys, tokens, user
// info, metadata.
const FetchTimeout = 10 * time.Second

// NewHTTPClient returns the client identity providers are reached with: no proxy from the
// environment, no more than FetchTimeout per request, at most three redirects, and only public
// addresses unless one of allowed contains the address (an IdP on the organization's private
// network, or 127.0.0.1 in tests).
func NewHTTPClient(allowed []netip.Prefix) *http.Client {
	dialer := &net.Dialer{Timeout: FetchTimeout, Control: netguard.DialControl(allowed)}
	return &http.Client{
		Timeout: FetchTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   FetchTimeout,
			ResponseHeaderTimeout: FetchTimeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("stopped after 3 redirects")
			}
			return nil
		},
	}
}

// refuse is a sign-in answer that is not accepted: the detail tells the admin what was wrong,
// and the protocol library's own words follow when there are any.
func refuse(detail string, cause error) error {
	if cause != nil {
		detail = fmt.Sprintf("%s: %v", detail, cause)
	}
	return &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: detail}
}
