package auth

import (
	"context"
	"sync"
	"time"
)

// SessionStore is the storage SessionChecker needs.
type SessionStore interface {
	SessionActive(ctx context.Context, sessionID string) (bool, error)
}

// DefaultSessionCacheTTL bounds how long a sign-in's state is trusted from memory: a logout or a
// refresh-token replay on any instance takes effect everywhere within it.
const DefaultSessionCacheTTL = 500 * time.Millisecond

// SessionChecker tells whether a sign-in is still active, remembering answers for a short TTL so
// a busy user costs one query per TTL rather than one per request.
type SessionChecker struct {
	store SessionStore
	ttl   time.Duration
	now   func() time.Time
	mu    sync.RWMutex
	cache map[string]sessionState
}

type sessionState struct {
	active   bool
	loadedAt time.Time
}

// NewSessionChecker returns a checker; a ttl of 0 means DefaultSessionCacheTTL.
func NewSessionChecker(store SessionStore, ttl time.Duration) *SessionChecker {
	if ttl <= 0 {
		ttl = DefaultSessionCacheTTL
	}
	return &SessionChecker{store: store, ttl: ttl, now: time.Now, cache: map[string]sessionState{}}
}

// Active reports whether the sign-in is active.
func (c *SessionChecker) Active(ctx context.Context, sessionID string) (bool, error) {
	now := c.now()
	c.mu.RLock()
	st, ok := c.cache[sessionID]
	c.mu.RUnlock()
	if ok && now.Sub(st.loadedAt) < c.ttl {
		return st.active, nil
	}
	active, err := c.store.SessionActive(ctx, sessionID)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	if len(c.cache) > 100_000 { // bound memory: drop everything stale
		for id, s := range c.cache {
			if now.Sub(s.loadedAt) >= c.ttl {
				delete(c.cache, id)
			}
		}
	}
	c.cache[sessionID] = sessionState{active: active, loadedAt: now}
	c.mu.Unlock()
	return active, nil
}

// Forget drops a sign-in from this instance's cache (after revoking it here).
func (c *SessionChecker) Forget(sessionID string) {
	c.mu.Lock()
	delete(c.cache, sessionID)
	c.mu.Unlock()
}
