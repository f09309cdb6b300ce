package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bgcheck/bgcheck"
)

// TokenType tells access tokens from refresh tokens; each is refused where the other belongs.
type TokenType string

// The two token types (the typ claim).
const (
	AccessToken  TokenType = "access"
	RefreshToken TokenType = "refresh"
)

// Token lifetimes (API.md §2: 900 s and 604800 s).
const (
	AccessTTL  = 15 * time.Minute
	RefreshTTL = 7 * 24 * time.Hour
)

// The issuer and audience every token names and every parse demands.
const (
	TokenIssuer   = "bgcheck"
	TokenAudience = "bgcheck-portal"
)

// ClockLeeway is how far apart the clocks of the instance that issued a token and the one that
// checks it may be: a token issued a moment "in the future" by a fast clock, or expired a
// moment ago by a slow one, is still accepted.
const ClockLeeway = 30 * time.Second

// minKeyBytes is the least signing-key length accepted: HS256 wants at least 256 bits.
const minKeyBytes = 32

// Claims are a portal token's claims (API.md §2): sub (user id), acct, role, typ, jti, iat, exp,
// and sid, the sign-in the token belongs to, which logout and refresh reuse revoke. amr says how
// the sign-in was made (RFC 8176's claim: ["pwd"] for a password, ["sso"] through an identity
// provider, absent for links), and sso_conn names the SSO connection it went through.
type Claims struct {
	jwt.RegisteredClaims
	Account       string       `json:"acct,omitempty"`
	Role          bgcheck.Role `json:"role"`
	Type          TokenType    `json:"typ"`
	Session       string       `json:"sid"`
	AMR           []string     `json:"amr,omitempty"`
	SSOConnection string       `json:"sso_conn,omitempty"`
}

// The authentication methods a token's amr may name.
const (
	MethodPassword = "pwd"
	MethodSSO      = "sso"
)

// Tokens issues and checks portal JWTs with HMAC-SHA256. Tokens are signed with the current key
// and carry its id in the kid header; previous keys still verify, so a key can be rotated without
// signing everybody out: add the new key, keep the old one as previous until its tokens expire.
type Tokens struct {
	currentID string
	current   []byte
	keys      map[string][]byte
	parser    *jwt.Parser
	now       func() time.Time
}

// NewTokens returns a token issuer signing with current and also accepting previous keys. Every
// key must have at least 32 bytes.
func NewTokens(current []byte, previous ...[]byte) (*Tokens, error) {
	t := &Tokens{keys: map[string][]byte{}, now: time.Now}
	for i, k := range append([][]byte{current}, previous...) {
		if len(k) < minKeyBytes {
			return nil, fmt.Errorf("auth: a JWT signing key needs at least %d bytes", minKeyBytes)
		}
		t.keys[KeyID(k)] = k
		if i == 0 {
			t.currentID, t.current = KeyID(k), k
		}
	}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(TokenIssuer),
		jwt.WithAudience(TokenAudience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(ClockLeeway),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t, nil
}

// KeyID names a key without revealing it: the first 16 hex digits of its SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// RandomKey returns a fresh 256-bit signing key, for development when none is configured.
func RandomKey() []byte {
	k := make([]byte, minKeyBytes)
	_, _ = rand.Read(k)
	return k
}

// Subject is who a token is for.
type Subject struct {
	UserID    string
	AccountID string // "" for a consumer who belongs to no account
	Role      bgcheck.Role
	SessionID string
	// Method is how the sign-in was made (MethodPassword, MethodSSO, or "" for a link), and
	// SSOConnection the connection of an SSO sign-in; refreshed tokens keep both.
	Method        string
	SSOConnection string
}

// Issued is a signed token and what the issuer must remember of it.
type Issued struct {
	Token     string
	ID        string // jti
	ExpiresAt time.Time
}

// Issue signs a token of the given type for sub.
func (t *Tokens) Issue(sub Subject, typ TokenType) (Issued, error) {
	ttl := AccessTTL
	if typ == RefreshToken {
		ttl = RefreshTTL
	}
	now := t.now().Truncate(time.Second)
	jti := newTokenID()
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: TokenIssuer, Audience: jwt.ClaimStrings{TokenAudience}, Subject: sub.UserID, ID: jti,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Account: sub.AccountID, Role: sub.Role, Type: typ, Session: sub.SessionID,
		SSOConnection: sub.SSOConnection,
	}
	if sub.Method != "" {
		claims.AMR = []string{sub.Method}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["kid"] = t.currentID
	signed, err := tok.SignedString(t.current)
	if err != nil {
		return Issued{}, err
	}
	return Issued{Token: signed, ID: jti, ExpiresAt: now.Add(ttl)}, nil
}

// Parse checks a token strictly (HS256 only, a known kid, issuer, audience, expiry and issued-at
// present and valid, the expected typ, a subject and a session) and returns its claims. An
// expired token is bgcheck.CodeTokenExpired; anything else wrong is bgcheck.CodeInvalidToken.
func (t *Tokens) Parse(raw string, want TokenType) (*Claims, error) {
	var claims Claims
	_, err := t.parser.ParseWithClaims(raw, &claims, t.keyFor)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, &bgcheck.Error{Code: bgcheck.CodeTokenExpired, Detail: "the token has expired; refresh it or sign in again"}
	case err != nil:
		return nil, errInvalidToken
	case claims.Type != want:
		return nil, &bgcheck.Error{Code: bgcheck.CodeInvalidToken, Detail: fmt.Sprintf("a %s token was expected", want)}
	case claims.Subject == "" || claims.Session == "" || claims.ID == "" ||
		(claims.Role != bgcheck.RoleAdmin && claims.Role != bgcheck.RoleConsumer):
		return nil, errInvalidToken
	}
	return &claims, nil
}

var errInvalidToken = &bgcheck.Error{Code: bgcheck.CodeInvalidToken, Detail: "the token is not valid"}

func (t *Tokens) keyFor(tok *jwt.Token) (any, error) {
	kid, _ := tok.Header["kid"].(string)
	key, ok := t.keys[kid]
	if !ok {
		return nil, errors.New("unknown signing key")
	}
	return key, nil
}

func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
