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
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/netguard"
)

// FetchTimeout bounds every request to an identity provider: discovery, keys, tokens, user
// info, metadata.
const FetchTimeout = 10 * time.Second

// MaxIdPResponseBytes bounds every body read from an identity provider (a discovery document,
// a key set, a token or userinfo answer); metadata has its own, smaller bound.
const MaxIdPResponseBytes = 1 << 20

// NewHTTPClient returns the client identity providers are reached with: no proxy from the
// environment, no more than FetchTimeout per request, bodies cut at MaxIdPResponseBytes, at most
// three redirects and none from https to plain http outside allowed, and only public addresses
// unless one of allowed contains the address (an IdP on the organization's private network, or
// 127.0.0.1 in tests).
func NewHTTPClient(allowed []netip.Prefix) *http.Client {
	dialer := &net.Dialer{Timeout: FetchTimeout, Control: netguard.DialControl(allowed)}
	return &http.Client{
		Timeout: FetchTimeout,
		Transport: limitedBodies{&http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   FetchTimeout,
			ResponseHeaderTimeout: FetchTimeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		}},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errTooManyRedirects
			}
			if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" && !PlainHTTPAllowed(req.URL, allowed) {
				return errInsecureRedirect
			}
			return nil
		},
	}
}

var (
	errTooManyRedirects = errors.New("stopped after 3 redirects")
	errInsecureRedirect = errors.New("refused a redirect from https to plain http")
)

// PlainHTTPAllowed reports whether u may be fetched without TLS: only when its host is an
// address literal inside allowed (the operator's private networks for identity providers).
func PlainHTTPAllowed(u *url.URL, allowed []netip.Prefix) bool {
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range allowed {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// limitedBodies cuts every response body at MaxIdPResponseBytes: a reader past it fails, so
// a provider cannot make us buffer without bound.
type limitedBodies struct{ next http.RoundTripper }

func (l limitedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxIdPResponseBytes}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

var errBodyTooLarge = fmt.Errorf("the identity provider's answer is larger than %d bytes", MaxIdPResponseBytes)

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// Refusal is an identity provider's answer that is not accepted. Err is what the person
// signing in and the admin see; Cause, the protocol library's own words, may quote the
// provider's response, so it goes to the log only.
type Refusal struct {
	Err   *bgcheck.Error
	Cause error
}

func (r *Refusal) Error() string {
	if r.Cause == nil {
		return r.Err.Error()
	}
	return r.Err.Error() + ": " + r.Cause.Error()
}

// Unwrap lets errors.As find the caller-safe *bgcheck.Error.
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(detail string, cause error) error {
	return &Refusal{Err: &bgcheck.Error{Code: bgcheck.CodeSSOFailed, Detail: detail}, Cause: cause}
}
