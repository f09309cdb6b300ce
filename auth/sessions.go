package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bgcheck/bgcheck"
)

// SessionStore is the storage SessionChecker needs.
type SessionStore interface {
	FindSession(ctx context.Context, sessionID string) (*bgcheck.Session, error)
}

// DefaultSessionCacheTTL bounds how long a sign-in's state is trusted from memory: a logout, a
// refresh-token replay or a change of a user's role or account on any instance takes effect
// everywhere within it, which must stay under one second.
const DefaultSessionCacheTTL = 500 * time.Millisecond

// SessionChecker turns a token's claims into the principal a request acts as. The token proves
// only that we signed it once; the session it names must still be active, must belong to the
// token's subject, and the account and role come from storage, not from the token. Answers are
// remembered for a short TTL so a busy user costs one query per TTL rather than one per request.
type SessionChecker struct {
	store SessionStore
	ttl   time.Duration
	now   func() time.Time
	mu    sync.RWMutex
	cache map[string]cachedSession
}

type cachedSession struct {
	session  *bgcheck.Session // nil: no such session
	loadedAt time.Time
}

// NewSessionChecker returns a checker; a ttl of 0 means DefaultSessionCacheTTL.
func NewSessionChecker(store SessionStore, ttl time.Duration) *SessionChecker {
	if ttl <= 0 {
		ttl = DefaultSessionCacheTTL
	}
	return &SessionChecker{store: store, ttl: ttl, now: time.Now, cache: map[string]cachedSession{}}
}

var errSessionEnded = &bgcheck.Error{Code: bgcheck.CodeInvalidToken, Detail: "this sign-in has ended; sign in again"}

// Authorize checks claims against the session they name and returns them corrected to what
// storage says now: Account and Role are replaced by the user's current ones. An unknown or
// revoked session, or one of another user, is bgcheck.CodeInvalidToken.
func (c *SessionChecker) Authorize(ctx context.Context, claims *Claims) (*Claims, error) {
	s, err := c.find(ctx, claims.Session)
	if err != nil {
		return nil, err
	}
	if s == nil || s.Revoked || s.UserID != claims.Subject {
		return nil, errSessionEnded
	}
	out := *claims
	out.Account, out.Role = s.AccountID, s.Role
	return &out, nil
}

func (c *SessionChecker) find(ctx context.Context, sessionID string) (*bgcheck.Session, error) {
	now := c.now()
	c.mu.RLock()
	st, ok := c.cache[sessionID]
	c.mu.RUnlock()
	if ok && now.Sub(st.loadedAt) < c.ttl {
		return st.session, nil
	}
	s, err := c.store.FindSession(ctx, sessionID)
	if errors.Is(err, bgcheck.ErrNotFound) {
		s, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.cache) > 100_000 { // bound memory: drop everything stale
		for id, e := range c.cache {
			if now.Sub(e.loadedAt) >= c.ttl {
				delete(c.cache, id)
			}
		}
	}
	c.cache[sessionID] = cachedSession{session: s, loadedAt: now}
	c.mu.Unlock()
	return s, nil
}

// Forget drops a sign-in from this instance's cache (after revoking it here).
func (c *SessionChecker) Forget(sessionID string) {
	c.mu.Lock()
	delete(c.cache, sessionID)
	c.mu.Unlock()
}
