package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/postgres"
)

const (
	minPasswordLength = 10
	maxPasswordLength = 1024 // argon2id over megabytes would be a cheap way to burn our CPU
	magicLinkTTL      = 15 * time.Minute
	prefixSession     = "ses"
)

// MagicLinkSender delivers a sign-in link to a consumer. Package mail has the SMTP one and the
// one that only logs.
type MagicLinkSender interface {
	SendMagicLink(ctx context.Context, to, link string) error
}

// tokenPair is the answer of every sign-in (API.md §3).
type tokenPair struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	RefreshExpiresIn int    `json:"refresh_expires_in"`
}

// dummyPasswordHash is checked against when the e-mail is unknown, so an unknown e-mail costs the
// same argon2id work as a wrong password and the two cannot be told apart by timing.
var dummyPasswordHash = func() string {
	h, err := auth.HashPassword("a password nobody has")
	if err != nil {
		panic(err)
	}
	return h
}()

var errInvalidCredentials = bgcheck.Errorf(bgcheck.CodeInvalidCredentials, "the e-mail or the password is wrong")

type credentials struct {
	Email    *string `json:"email"`
	Password *string `json:"password"`
	Name     *string `json:"name"`
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	var req credentials
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if req.Email == nil || *req.Email == "" {
		v.add("email", "is required")
	}
	if req.Password == nil || *req.Password == "" {
		v.add("password", "is required")
	} else if len(*req.Password) > maxPasswordLength {
		v.add("password", "must be at most 1024 bytes")
	}
	if req.Name != nil {
		v.add("name", "is not accepted here")
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	user, hash, err := s.db.FindUserByEmail(r.Context(), *req.Email)
	if err != nil && bgcheck.ErrorCode(err) != bgcheck.CodeNotFound {
		writeError(w, r, err)
		return
	}
	known := user != nil && hash != ""
	if !known {
		hash = dummyPasswordHash // the same work as for a real user, so the answer takes as long
	}
	switch err := s.passwords.Check(r.Context(), hash, *req.Password); {
	case bgcheck.ErrorCode(err) == bgcheck.CodeUnavailable || errors.Is(err, context.DeadlineExceeded):
		writeError(w, r, err) // busy or out of time: retry, not "wrong password"
		return
	case err != nil || !known:
		writeError(w, r, errInvalidCredentials)
		return
	}
	// Only after the password is right: the answer must not tell who has an account.
	if err := s.refuseIfSSORequired(r.Context(), user.ID); err != nil {
		writeError(w, r, err)
		return
	}
	s.startSession(w, r, user, auth.MethodPassword, http.StatusOK)
}

// errSSORequired names the way in for an admin whose account requires single sign-on.
var errSSORequired = &bgcheck.Error{Code: bgcheck.CodeSSORequired,
	Detail: "your account requires single sign-on: sign in through your identity provider with " +
		"POST /api/v1/auth/sso/start {\"email\": ...}, or \"Continue\" with your e-mail on the dashboard's sign-in page"}

// errSSOSessionEnded refuses to refresh a single sign-on whose connection no longer lets the
// user in.
var errSSOSessionEnded = &bgcheck.Error{Code: bgcheck.CodeInvalidToken,
	Detail: "the SSO connection this sign-in came through is disabled or changed: sign in again"}

// refuseIfSSORequired answers errSSORequired for an admin who must sign in through SSO.
func (s *Server) refuseIfSSORequired(ctx context.Context, userID string) error {
	required, err := s.db.SSORequiredFor(ctx, userID)
	if err != nil {
		return err
	}
	if required {
		return errSSORequired
	}
	return nil
}

// handleRegister creates a consumer of no account and signs them in.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	var req credentials
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	var v validator
	if req.Email == nil || *req.Email == "" {
		v.add("email", "is required")
	} else {
		v.check("email", checkEmail(*req.Email))
	}
	switch {
	case req.Password == nil || *req.Password == "":
		v.add("password", "is required")
	case utf8.RuneCountInString(*req.Password) < minPasswordLength:
		v.add("password", "must be at least 10 characters")
	case len(*req.Password) > maxPasswordLength:
		v.add("password", "must be at most 1024 bytes")
	}
	name := ""
	if req.Name != nil {
		v.maxLen("name", *req.Name, maxNameLength)
		name = *req.Name
	}
	if err := v.err(); err != nil {
		writeError(w, r, err)
		return
	}
	hash, err := s.passwords.Hash(r.Context(), *req.Password)
	if err != nil {
		writeError(w, r, err)
		return
	}
	user, err := s.db.CreateUser(r.Context(), postgres.NewUser{Email: *req.Email, Name: name, Role: bgcheck.RoleConsumer, PasswordHash: hash})
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.startSession(w, r, user, auth.MethodPassword, http.StatusCreated)
}

// startSession opens a sign-in for user, made by method (auth.MethodPassword, or "" for a
// link), and answers with its first token pair.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, user *bgcheck.User, method string, status int) {
	pair, err := s.newSession(r.Context(), user, auth.Subject{Method: method})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, pair)
}

// newSession records a new sign-in of user and returns its first token pair; how carries the
// sign-in's method and SSO connection.
func (s *Server) newSession(ctx context.Context, user *bgcheck.User, how auth.Subject) (tokenPair, error) {
	sub := auth.Subject{UserID: user.ID, Role: user.Role, SessionID: bgcheck.NewID(prefixSession),
		Method: how.Method, SSOConnection: how.SSOConnection}
	if user.AccountID != nil {
		sub.AccountID = *user.AccountID
	}
	pair, refresh, err := s.issuePair(sub)
	if err != nil {
		return tokenPair{}, err
	}
	if err := s.db.StartSession(ctx, sub.SessionID, user.ID, refresh.ID, refresh.ExpiresAt); err != nil {
		return tokenPair{}, err
	}
	return pair, nil
}

func (s *Server) issuePair(sub auth.Subject) (tokenPair, auth.Issued, error) {
	access, err := s.tokens.Issue(sub, auth.AccessToken)
	if err != nil {
		return tokenPair{}, auth.Issued{}, err
	}
	refresh, err := s.tokens.Issue(sub, auth.RefreshToken)
	if err != nil {
		return tokenPair{}, auth.Issued{}, err
	}
	return tokenPair{
		AccessToken: access.Token, RefreshToken: refresh.Token, TokenType: "Bearer",
		ExpiresIn: int(auth.AccessTTL.Seconds()), RefreshExpiresIn: int(auth.RefreshTTL.Seconds()),
	}, refresh, nil
}

type refreshRequest struct {
	RefreshToken *string `json:"refresh_token"`
}

// handleRefresh trades a refresh token for a new pair and retires it; a second use of the same
// refresh token revokes the sign-in.
func (s *Server) handleRefresh(w http.ResponseWriter, r *http.Request) {
	var req refreshRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.RefreshToken == nil || *req.RefreshToken == "" {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "refresh_token", Message: "is required"}))
		return
	}
	claims, err := s.tokens.Parse(*req.RefreshToken, auth.RefreshToken)
	if err == nil {
		// The new pair names the session's user with the account and role they have now.
		claims, err = s.sessions.Authorize(r.Context(), claims)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	sub := auth.Subject{UserID: claims.Subject, AccountID: claims.Account, Role: claims.Role, SessionID: claims.Session,
		SSOConnection: claims.SSOConnection}
	if len(claims.AMR) > 0 {
		sub.Method = claims.AMR[0]
	}
	// A sign-in made before the account required SSO ends at its next refresh; so does one
	// made through a connection since disabled, deleted or pointed at another IdP.
	if sub.Method != auth.MethodSSO && claims.Role == bgcheck.RoleAdmin {
		if err := s.refuseIfSSORequired(r.Context(), claims.Subject); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if sub.Method == auth.MethodSSO {
		ok, err := s.db.SSOSessionValid(r.Context(), claims.Subject, claims.SSOConnection)
		if err == nil && !ok {
			err = errSSOSessionEnded
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
	}
	pair, refresh, err := s.issuePair(sub)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if err := s.db.RotateRefresh(r.Context(), claims.Session, claims.ID, refresh.ID, refresh.ExpiresAt); err != nil {
		if bgcheck.ErrorCode(err) == bgcheck.CodeRefreshTokenReused {
			s.sessions.Forget(claims.Session)
			requestLogger(r).Warn("refresh token replayed; sign-in revoked", "user_id", claims.Subject, "session_id", claims.Session)
		}
		writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, pair)
}

// handleLogout ends the caller's sign-in: its refresh tokens and access tokens stop working.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 { // the body is optional; a refresh_token in it is accepted and ignored
		var req refreshRequest
		if err := decodeJSON(r, &req); err != nil {
			writeError(w, r, err)
			return
		}
	}
	claims := userOf(r)
	if err := s.db.RevokeSession(r.Context(), claims.Session, "logout"); err != nil {
		writeError(w, r, err)
		return
	}
	s.sessions.Forget(claims.Session)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	user, err := s.db.FindUser(r.Context(), userOf(r).Subject)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": user.ID, "email": user.Email, "name": user.Name, "role": user.Role, "account_id": user.AccountID,
	})
}

type magicLinkRequest struct {
	Email *string `json:"email"`
}

// handleMagicLinkRequest always answers 202 {} at once. Looking the user up, storing the link and
// sending the mail happen afterwards, so neither the answer nor its timing says whether the
// e-mail belongs to a consumer.
func (s *Server) handleMagicLinkRequest(w http.ResponseWriter, r *http.Request) {
	var req magicLinkRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, r, err)
		return
	}
	if req.Email == nil || *req.Email == "" {
		writeError(w, r, bgcheck.ValidationError(bgcheck.FieldError{Field: "email", Message: "is required"}))
		return
	}
	email, log := *req.Email, requestLogger(r)
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.sendMagicLink(ctx, email, log)
	}()
	writeJSON(w, http.StatusAccepted, struct{}{})
}

func (s *Server) sendMagicLink(ctx context.Context, email string, log *slog.Logger) {
	user, _, err := s.db.FindUserByEmail(ctx, email)
	if err != nil || user.Role != bgcheck.RoleConsumer {
		if err != nil && bgcheck.ErrorCode(err) != bgcheck.CodeNotFound {
			log.Error("magic link: look up user", "err", err)
		}
		return // only existing consumers get a mail
	}
	var raw [32]byte // 256 bits
	_, _ = rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	hash := sha256.Sum256([]byte(token))
	if err := s.db.CreateMagicLink(ctx, user.ID, hash[:], time.Now().Add(magicLinkTTL)); err != nil {
		log.Error("magic link: store", "err", err)
		return
	}
	link := strings.TrimRight(s.opts.PortalURL, "/") + "/magic-link?token=" + token
	if err := s.opts.Mailer.SendMagicLink(ctx, user.Email, link); err != nil {
		log.Error("magic link: send", "user_id", user.ID, "err", err)
	}
}

// tokenRequest is the body of the routes that trade an e-mailed link's token for a sign-in.
type tokenRequest struct {
	Token *string `json:"token"`
}

// decodeTokenHash reads a tokenRequest and returns the SHA-256 of its token: links' tokens are
// stored only as hashes.
func decodeTokenHash(r *http.Request) ([]byte, error) {
	var req tokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Token == nil || *req.Token == "" {
		return nil, bgcheck.ValidationError(bgcheck.FieldError{Field: "token", Message: "is required"})
	}
	hash := sha256.Sum256([]byte(*req.Token))
	return hash[:], nil
}

func (s *Server) handleMagicLinkVerify(w http.ResponseWriter, r *http.Request) {
	hash, err := decodeTokenHash(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	user, err := s.db.UseMagicLink(r.Context(), hash)
	if err == nil {
		err = s.refuseIfSSORequired(r.Context(), user.ID)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	s.startSession(w, r, user, "", http.StatusOK)
}
