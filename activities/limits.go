package activities

import "sync"

// Defaults for InFlightLimits (BGCHECK_WORKER_ENDPOINT_CONCURRENCY, _ACCOUNT_CONCURRENCY).
const (
	DefaultEndpointConcurrency = 10
	DefaultAccountConcurrency  = 50
)

// InFlightLimits bounds the attempts one worker has in flight per endpoint and per account, so
// that one tenant's endpoints that never answer (each attempt holding a slot for the 30 s
// timeout) cannot take every one of the worker's slots. An attempt over a limit is not queued
// here, where it would hold a slot while it waited: it comes back deferred, and its workflow
// sleeps durably and asks again, leaving the slot to other tenants.
type InFlightLimits struct {
	perEndpoint, perAccount int

	mu        sync.Mutex
	endpoints map[string]int
	accounts  map[string]int
}

// NewInFlightLimits returns limits of perEndpoint and perAccount attempts (≤ 0: the defaults).
func NewInFlightLimits(perEndpoint, perAccount int) *InFlightLimits {
	if perEndpoint <= 0 {
		perEndpoint = DefaultEndpointConcurrency
	}
	if perAccount <= 0 {
		perAccount = DefaultAccountConcurrency
	}
	return &InFlightLimits{perEndpoint: perEndpoint, perAccount: perAccount,
		endpoints: map[string]int{}, accounts: map[string]int{}}
}

// tryAcquire takes a place for an attempt to the endpoint of the account, if both have one free.
func (l *InFlightLimits) tryAcquire(accountID, endpointID string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.endpoints[endpointID] >= l.perEndpoint || l.accounts[accountID] >= l.perAccount {
		return false
	}
	l.endpoints[endpointID]++
	l.accounts[accountID]++
	return true
}

// release gives back a place taken by tryAcquire.
func (l *InFlightLimits) release(accountID, endpointID string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.endpoints[endpointID]--; l.endpoints[endpointID] <= 0 {
		delete(l.endpoints, endpointID)
	}
	if l.accounts[accountID]--; l.accounts[accountID] <= 0 {
		delete(l.accounts, accountID)
	}
}
