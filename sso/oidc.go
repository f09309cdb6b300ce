package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/bgcheck/bgcheck"
)

// OIDCConfig is one connection's relying-party settings.
type OIDCConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	RedirectURL  string
}

// providerTTL is how long a discovered provider (its endpoints and key set) is reused before
// discovery runs again; the key set itself re-fetches keys when it meets an unknown kid.
const providerTTL = time.Hour

// OIDC is the relying party of every OIDC connection, with one discovered provider per issuer.
type OIDC struct {
	client  *http.Client
	allowed []netip.Prefix
	now     func() time.Time

	mu        sync.Mutex
	providers map[string]discovered
}

type discovered struct {
	provider *oidc.Provider
	at       time.Time
}

// NewOIDC returns a relying party that reaches providers with client. A provider's endpoints
// must be https, or plain http to an address in allowed.
func NewOIDC(client *http.Client, allowed []netip.Prefix) *OIDC {
	return &OIDC{client: client, allowed: allowed, now: time.Now, providers: map[string]discovered{}}
}

// withClient makes go-oidc and x/oauth2 use the guarded client.
func (o *OIDC) withClient(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.client)
}

// Discover fetches the issuer's discovery document (or reuses it for an hour). The issuer in
// the document must be exactly the one configured.
func (o *OIDC) Discover(ctx context.Context, issuer string) (*oidc.Provider, error) {
	o.mu.Lock()
	d, ok := o.providers[issuer]
	o.mu.Unlock()
	if ok && o.now().Sub(d.at) < providerTTL {
		return d.provider, nil
	}
	// The provider keeps its context for fetching keys later: a background one, carrying only
	// the client, whose timeout bounds each fetch.
	p, err := oidc.NewProvider(o.withClient(context.WithoutCancel(ctx)), issuer)
	if err != nil {
		return nil, err
	}
	var more struct {
		JWKS     string `json:"jwks_uri"`
		UserInfo string `json:"userinfo_endpoint"`
	}
	if err := p.Claims(&more); err != nil {
		return nil, err
	}
	for _, raw := range []string{p.Endpoint().AuthURL, p.Endpoint().TokenURL, more.JWKS, more.UserInfo} {
		u, err := url.Parse(raw)
		if raw != "" && (err != nil || u.Scheme != "https" && !(u.Scheme == "http" && PlainHTTPAllowed(u, o.allowed))) {
			return nil, fmt.Errorf("the discovery document names an endpoint that is not https: %q", raw)
		}
	}
	o.mu.Lock()
	o.providers[issuer] = discovered{provider: p, at: o.now()}
	o.mu.Unlock()
	return p, nil
}

func (o *OIDC) oauth2Config(ctx context.Context, cfg OIDCConfig) (*oauth2.Config, *oidc.Provider, error) {
	p, err := o.Discover(ctx, cfg.Issuer)
	if err != nil {
		return nil, nil, refuse("the identity provider's discovery document could not be read", err)
	}
	return &oauth2.Config{
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"},
	}, p, nil
}

// AuthCodeURL is where the browser goes to sign in: an authorization request carrying state,
// nonce and the S256 challenge of verifier.
func (o *OIDC) AuthCodeURL(ctx context.Context, cfg OIDCConfig, state, nonce, verifier string) (string, error) {
	oc, _, err := o.oauth2Config(ctx, cfg)
	if err != nil {
		return "", err
	}
	return oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Exchange trades an authorization code for tokens, checks the ID token (signature, issuer,
// audience, expiry, and the nonce, which go-oidc leaves to us) and returns who signed in. When
// the ID token carries no e-mail, the userinfo endpoint is asked, and its subject must match.
func (o *OIDC) Exchange(ctx context.Context, cfg OIDCConfig, code, verifier, nonce string) (bgcheck.SSOIdentity, error) {
	oc, p, err := o.oauth2Config(ctx, cfg)
	if err != nil {
		return bgcheck.SSOIdentity{}, err
	}
	ctx = o.withClient(ctx)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return bgcheck.SSOIdentity{}, refuse("the identity provider refused the authorization code", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return bgcheck.SSOIdentity{}, refuse("the identity provider's token response has no ID token", nil)
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return bgcheck.SSOIdentity{}, refuse(idTokenReason(err), err)
	}
	if idt.Nonce != nonce {
		return bgcheck.SSOIdentity{}, refuse("the ID token's nonce is not the one this sign-in sent", nil)
	}
	var claims profileClaims
	if err := idt.Claims(&claims); err != nil {
		return bgcheck.SSOIdentity{}, refuse("the ID token's claims cannot be read", err)
	}
	if claims.Email == "" {
		info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return bgcheck.SSOIdentity{}, refuse("the identity provider's userinfo endpoint failed", err)
		}
		if info.Subject != idt.Subject {
			return bgcheck.SSOIdentity{}, refuse("userinfo names another subject than the ID token", nil)
		}
		if err := info.Claims(&claims); err != nil {
			return bgcheck.SSOIdentity{}, refuse("the userinfo claims cannot be read", err)
		}
	}
	return bgcheck.SSOIdentity{Subject: idt.Subject, Email: claims.Email,
		EmailVerified: bool(claims.EmailVerified), Name: claims.Name}, nil
}

// idTokenReason says in our words why go-oidc refused an ID token; its words, which quote the
// token's claims, go to the log. go-oidc checks the signature first, so a token changed after
// signing reads as that, whatever else is wrong with it.
func idTokenReason(err error) string {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return "the ID token has expired: check that the identity provider's clock is right, and sign in again"
	case strings.Contains(msg, "failed to verify signature"):
		return "the ID token's signature is not valid"
	case strings.Contains(msg, "expected audience"):
		return "the ID token was issued to another client: its audience is not this connection's client id"
	case strings.Contains(msg, "issued by a different provider"):
		return "the ID token's issuer is not the connection's issuer"
	case strings.Contains(msg, "before the nbf"):
		return "the ID token is not valid yet: check that the identity provider's clock is right"
	}
	return "the ID token is not valid"
}

type profileClaims struct {
	Email         string       `json:"email"`
	EmailVerified flexibleBool `json:"email_verified"`
	Name          string       `json:"name"`
}

// flexibleBool reads true or "true": some providers (Amazon Cognito among them) send the
// e-mail's verification as a string.
type flexibleBool bool

func (b *flexibleBool) UnmarshalJSON(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch t := v.(type) {
	case bool:
		*b = flexibleBool(t)
	case string:
		parsed, _ := strconv.ParseBool(t)
		*b = flexibleBool(parsed)
	}
	return nil
}

// authorizationErrors say in our words what an identity provider's error code on the redirect
// back means (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6).
var authorizationErrors = map[string]string{
	"access_denied": "the identity provider denied the sign-in: it was cancelled there, or this person is not " +
		"assigned to the application",
	"login_required":             "the identity provider wants the person to sign in there first: start again",
	"interaction_required":       "the identity provider needs the person to act there first: start again",
	"consent_required":           "the identity provider needs the person's consent for this application: start again",
	"account_selection_required": "the identity provider needs the person to choose an account: start again",
	"temporarily_unavailable":    "the identity provider is temporarily unavailable: try again in a few minutes",
	"server_error":               "the identity provider had an internal error: try again, and tell its administrator if it persists",
	"unauthorized_client":        "the identity provider does not let this application use the authorization code flow: check the application's settings there",
	"invalid_scope":              "the identity provider refused the scopes openid, email and profile: allow them for this application",
	"unsupported_response_type":  "the identity provider does not offer the authorization code flow to this application",
	"invalid_request":            "the identity provider refused the sign-in request: check the client id and the redirect URI registered there",
	"invalid_client":             "the identity provider does not know this client id: check the connection's client id",
}

// AuthorizationError is what an identity provider's error code on the redirect back means, in
// our words; a code we do not know gets a general sentence. The provider's error_description
// is its own text, which an answer must not echo: it belongs in the log.
func AuthorizationError(code string) string {
	if msg, ok := authorizationErrors[code]; ok {
		return msg
	}
	return "the identity provider refused the sign-in: its administrator can find the reason in its logs"
}
