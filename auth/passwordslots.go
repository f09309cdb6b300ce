package auth

import (
	"context"
	"runtime"
	"time"

	"github.com/bgcheck/bgcheck"
)

// PasswordSlots bounds how many argon2id computations run at once. Each one takes 19 MiB and a
// core for tens of milliseconds, so a flood of sign-ins from many addresses (each under its
// rate limit) would otherwise take memory without bound; with the slots full, a caller waits a
// moment and then hears ErrPasswordsBusy.
type PasswordSlots struct {
	slots chan struct{}
	wait  time.Duration
}

// DefaultPasswordSlots is 2 × GOMAXPROCS: enough to keep every core busy hashing.
func DefaultPasswordSlots() int { return 2 * runtime.GOMAXPROCS(0) }

// passwordSlotWait is how long a caller waits for a slot before being turned away: long enough
// to ride out a burst, short enough that a flood does not pile up waiting requests.
const passwordSlotWait = 250 * time.Millisecond

// NewPasswordSlots returns n slots; n ≤ 0 means DefaultPasswordSlots.
func NewPasswordSlots(n int) *PasswordSlots {
	if n <= 0 {
		n = DefaultPasswordSlots()
	}
	return &PasswordSlots{slots: make(chan struct{}, n), wait: passwordSlotWait}
}

// ErrPasswordsBusy is returned when every slot stayed taken for the whole wait: 503, retry.
var ErrPasswordsBusy = &bgcheck.Error{Code: bgcheck.CodeUnavailable,
	Detail: "too many sign-ins are being checked at once; retry in a second"}

// Hash is HashPassword within a slot.
func (p *PasswordSlots) Hash(ctx context.Context, password string) (string, error) {
	if err := p.acquire(ctx); err != nil {
		return "", err
	}
	defer p.release()
	return HashPassword(password)
}

// Check is CheckPassword within a slot; a caller turned away gets ErrPasswordsBusy, never a
// mismatch.
func (p *PasswordSlots) Check(ctx context.Context, encoded, password string) error {
	if err := p.acquire(ctx); err != nil {
		return err
	}
	defer p.release()
	return CheckPassword(encoded, password)
}

func (p *PasswordSlots) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-t.C:
		return ErrPasswordsBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *PasswordSlots) release() { <-p.slots }
