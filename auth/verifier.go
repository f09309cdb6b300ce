package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/bgcheck/bgcheck"
)

// KeyStore is the storage the verifier needs.
type KeyStore interface {
	FindAPIKeyByHash(ctx context.Context, hash []byte) (*bgcheck.APIKey, error)
	MarkAPIKeysUsed(ctx context.Context, used map[string]time.Time) error
}

// DefaultKeyCacheTTL bounds how long a verified key is trusted from memory. A key revoked on any
// instance stops working everywhere once the entries loaded before the revocation age out, so
// this must stay under the contract's one second.
const DefaultKeyCacheTTL = 500 * time.Millisecond

// Verifier checks presented API keys. Keys are looked up by hash and kept in memory for a short
// TTL, so a busy key costs one query per TTL rather than one per request; concurrent misses for
// the same key share one query. Use of a key is noted in memory and written to the database in
// batches by Run, never on the request's path.
type Verifier struct {
	store KeyStore
	ttl   time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu    sync.RWMutex
	cache map[[32]byte]cachedKey
	group singleflight.Group

	usedMu sync.Mutex
	used   map[string]time.Time
}

type cachedKey struct {
	key      *bgcheck.APIKey
	loadedAt time.Time
}

// NewVerifier returns a verifier backed by store. A ttl of 0 means DefaultKeyCacheTTL.
func NewVerifier(store KeyStore, ttl time.Duration, log *slog.Logger) *Verifier {
	if ttl <= 0 {
		ttl = DefaultKeyCacheTTL
	}
	return &Verifier{
		store: store, ttl: ttl, now: time.Now, log: log,
		cache: make(map[[32]byte]cachedKey),
		used:  make(map[string]time.Time),
	}
}

// Verify returns the key that raw names, if it may be used now from addr. Failures are
// *bgcheck.Error with the codes of API.md §1: invalid_api_key (malformed, unknown or revoked),
// api_key_expired, ip_not_allowed. Storage failures are returned as they are.
func (v *Verifier) Verify(ctx context.Context, raw string, addr netip.Addr) (*bgcheck.APIKey, error) {
	if _, ok := ParseAPIKey(raw); !ok {
		return nil, errInvalidKey
	}
	hash := HashAPIKey(raw)
	now := v.now()
	key, err := v.lookup(ctx, hash, now)
	if err != nil {
		return nil, err
	}
	switch {
	case key.RevokedAt != nil:
		return nil, errInvalidKey
	case key.ExpiredAt(now):
		return nil, &bgcheck.Error{Code: bgcheck.CodeAPIKeyExpired, Detail: "this API key expired at " + key.ExpiresAt.UTC().Format(time.RFC3339)}
	case !key.AllowsAddr(addr):
		return nil, &bgcheck.Error{Code: bgcheck.CodeIPNotAllowed, Detail: "this API key may not be used from " + addr.String()}
	}
	v.noteUse(key.ID, now)
	return key, nil
}

var errInvalidKey = &bgcheck.Error{Code: bgcheck.CodeInvalidAPIKey, Detail: "the API key is not valid"}

func (v *Verifier) lookup(ctx context.Context, hash [32]byte, now time.Time) (*bgcheck.APIKey, error) {
	v.mu.RLock()
	c, ok := v.cache[hash]
	v.mu.RUnlock()
	if ok && now.Sub(c.loadedAt) < v.ttl {
		return c.key, nil
	}
	return v.load(ctx, hash)
}

// KeyLoadTimeout bounds the query behind a cache miss. The query is shared by every request
// that misses on the key at once, so it does not end with the first of them to give up; this
// bound is what stops it, and each request still waits no longer than its own deadline.
const KeyLoadTimeout = 5 * time.Second

// load fetches a key on a cache miss; concurrent misses for one key share the query. It is apart
// from lookup so the hit path allocates nothing for the closure.
func (v *Verifier) load(ctx context.Context, hash [32]byte) (*bgcheck.APIKey, error) {
	ch := v.group.DoChan(string(hash[:]), func() (any, error) {
		loadedAt := v.now()
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), KeyLoadTimeout)
		defer cancel()
		key, err := v.store.FindAPIKeyByHash(qctx, hash[:])
		if err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.cache[hash] = cachedKey{key: key, loadedAt: loadedAt}
		v.mu.Unlock()
		return key, nil
	})
	var res any
	var err error
	select {
	case r := <-ch:
		res, err = r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if errors.Is(err, bgcheck.ErrNotFound) {
		return nil, errInvalidKey
	}
	if err != nil {
		return nil, err
	}
	return res.(*bgcheck.APIKey), nil
}

// Forget drops a key from this instance's cache at once (after a revocation here); other
// instances drop it within the TTL.
func (v *Verifier) Forget(keyID string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for h, c := range v.cache {
		if c.key.ID == keyID {
			delete(v.cache, h)
		}
	}
}

func (v *Verifier) noteUse(keyID string, at time.Time) {
	v.usedMu.Lock()
	v.used[keyID] = at
	v.usedMu.Unlock()
}

// Flush writes the noted uses of keys to the database and evicts stale cache entries.
func (v *Verifier) Flush(ctx context.Context) error {
	v.usedMu.Lock()
	used := v.used
	v.used = make(map[string]time.Time, len(used))
	v.usedMu.Unlock()

	v.mu.Lock()
	now := v.now()
	for h, c := range v.cache {
		if now.Sub(c.loadedAt) >= v.ttl {
			delete(v.cache, h)
		}
	}
	v.mu.Unlock()

	if err := v.store.MarkAPIKeysUsed(ctx, used); err != nil {
		// Put the uses back so the next flush tries again, keeping the newest time per key.
		v.usedMu.Lock()
		for id, t := range used {
			if cur, ok := v.used[id]; !ok || cur.Before(t) {
				v.used[id] = t
			}
		}
		v.usedMu.Unlock()
		return err
	}
	return nil
}

// Run flushes every interval until ctx ends, then flushes once more so a graceful shutdown
// loses no record of use.
func (v *Verifier) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := v.Flush(flushCtx); err != nil {
				v.log.Error("record API key use at shutdown", "err", err)
			}
			return
		case <-t.C:
			if err := v.Flush(ctx); err != nil && ctx.Err() == nil {
				v.log.Warn("record API key use", "err", err)
			}
		}
	}
}
