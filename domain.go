package bgcheck

import (
	"encoding/json"
	"net/netip"
	"slices"
	"time"
)

// Mode separates sandbox from production data. An API key's prefix sets its mode, and every
// record an integration can see belongs to exactly one mode: nothing crosses (API.md §2).
type Mode string

// The two modes.
const (
	ModeTest Mode = "test"
	ModeLive Mode = "live"
)

// Valid reports whether m is one of the two modes.
func (m Mode) Valid() bool { return m == ModeTest || m == ModeLive }

// Scopes an API key may be restricted to (API.md §2). A key with none has full access, and a
// :write scope does not imply :read.
const (
	ScopeCandidatesRead  = "candidates:read"
	ScopeCandidatesWrite = "candidates:write"
	ScopeChecksRead      = "checks:read"
	ScopeChecksWrite     = "checks:write"
	ScopeWebhooksRead    = "webhooks:read"
	ScopeWebhooksWrite   = "webhooks:write"
	ScopeBillingRead     = "billing:read"
	ScopeBillingWrite    = "billing:write"
	ScopeUsageRead       = "usage:read"
)

// Scopes lists every valid scope.
var Scopes = []string{
	ScopeCandidatesRead, ScopeCandidatesWrite, ScopeChecksRead, ScopeChecksWrite,
	ScopeWebhooksRead, ScopeWebhooksWrite, ScopeBillingRead, ScopeBillingWrite, ScopeUsageRead,
}

// Role is a portal user's role.
type Role string

// The two portal roles.
const (
	RoleAdmin    Role = "admin"
	RoleConsumer Role = "consumer"
)

// Account is a customer of the platform; every other record belongs to one.
type Account struct {
	ID        string    `json:"id" db:"id"`
	Name      string    `json:"name" db:"name"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
}

// User is a portal user. Admins belong to an account; a consumer who registered on their own
// belongs to none (AccountID nil).
type User struct {
	ID        string    `json:"id" db:"id"`
	AccountID *string   `json:"account_id" db:"account_id"`
	Email     string    `json:"email" db:"email"`
	Name      string    `json:"name" db:"name"`
	Role      Role      `json:"role" db:"role"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
}

// Session is a portal sign-in as storage knows it now: whose it is, the account and role that
// user has today, and whether it has been revoked. A token's claims are only a copy taken at
// sign-in; requests are authorized by this.
type Session struct {
	ID        string
	UserID    string
	AccountID string // "" for a consumer of no account
	Role      Role
	Revoked   bool
}

// NewAPIKey is an API key to store. Hash is the SHA-256 of the raw key, which is never stored.
type NewAPIKey struct {
	AccountID  string
	Name       string
	Mode       Mode
	Hash       []byte
	Prefix     string
	Last4      string
	Scopes     []string
	AllowedIPs []netip.Prefix
	ExpiresAt  *time.Time
}

// APIKey is an integration's credential as stored: the raw key is never kept, only its hash,
// plus the prefix and last four characters so a person can tell keys apart.
type APIKey struct {
	ID         string         `json:"id" db:"id"`
	AccountID  string         `json:"account_id" db:"account_id"`
	Name       string         `json:"name" db:"name"`
	Mode       Mode           `json:"mode" db:"mode"`
	Prefix     string         `json:"prefix" db:"prefix"`
	Last4      string         `json:"last4" db:"last4"`
	Scopes     []string       `json:"scopes" db:"scopes"`
	AllowedIPs []netip.Prefix `json:"allowed_ips" db:"allowed_ips"`
	ExpiresAt  *time.Time     `json:"expires_at" db:"expires_at"`
	RevokedAt  *time.Time     `json:"revoked_at,omitempty" db:"revoked_at"`
	LastUsedAt *time.Time     `json:"last_used_at" db:"last_used_at"`
	CreatedAt  time.Time      `json:"created_at" db:"created_at"`
}

// HasScope reports whether the key may use a route that needs scope.
func (k *APIKey) HasScope(scope string) bool {
	return len(k.Scopes) == 0 || slices.Contains(k.Scopes, scope)
}

// AllowsAddr reports whether a request from addr may use the key: any address when the key has
// no allowlist, otherwise only addresses inside one of its prefixes.
func (k *APIKey) AllowsAddr(addr netip.Addr) bool {
	if len(k.AllowedIPs) == 0 {
		return true
	}
	addr = addr.Unmap()
	for _, p := range k.AllowedIPs {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ExpiredAt reports whether the key has passed its expiry at now.
func (k *APIKey) ExpiredAt(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// WebhookEndpoint is a URL that receives signed event deliveries. Secret is the HMAC key; it is
// shown to the caller only when created or rotated.
type WebhookEndpoint struct {
	ID          string    `json:"id" db:"id"`
	AccountID   string    `json:"-" db:"account_id"`
	Mode        Mode      `json:"mode" db:"mode"`
	URL         string    `json:"url" db:"url"`
	Events      []string  `json:"events" db:"events"`
	Description string    `json:"description" db:"description"`
	Enabled     bool      `json:"enabled" db:"enabled"`
	Secret      string    `json:"-" db:"secret"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	UpdatedAt   time.Time `json:"updated_at" db:"updated_at"`
	// PreviousSecretExpiresAt is when the secret a rotation replaced stops signing; nil when
	// only the current secret signs.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at" db:"previous_secret_expires_at"`
	// Health: the last successful attempt; since when every attempt has failed (nil while the
	// last one succeeded); and, for an endpoint disabled automatically, when and why.
	LastSuccessAt  *time.Time `json:"last_success_at" db:"last_success_at"`
	FailingSince   *time.Time `json:"failing_since" db:"failing_since"`
	DisabledAt     *time.Time `json:"disabled_at" db:"disabled_at"`
	DisabledReason *string    `json:"disabled_reason" db:"disabled_reason"`
	// PausedAt is when the endpoint was paused; nil when it is not. A paused endpoint's
	// deliveries wait, attempts uncounted, until it is resumed.
	PausedAt *time.Time `json:"paused_at" db:"paused_at"`
}

// Candidate is a person being checked. Email, Phone and DOB are optional; DOB is a calendar
// date written YYYY-MM-DD.
type Candidate struct {
	ID        string    `json:"id" db:"id"`
	AccountID string    `json:"-" db:"account_id"`
	Mode      Mode      `json:"mode" db:"mode"`
	FirstName string    `json:"first_name" db:"first_name"`
	LastName  string    `json:"last_name" db:"last_name"`
	Email     *string   `json:"email" db:"email"`
	Phone     *string   `json:"phone" db:"phone"`
	DOB       *string   `json:"dob" db:"dob"`
	CreatedAt time.Time `json:"created_at" db:"created_at"`
	UpdatedAt time.Time `json:"updated_at" db:"updated_at"`
}

// Tenant is the account and mode a request acts in. Storage methods that serve integrations take
// one and filter on both, so another account's or the other mode's records are simply absent.
type Tenant struct {
	AccountID string
	Mode      Mode
}

// Event is something that happened in an account, stored once with the exact bytes of its
// envelope so that every delivery attempt sends the same body.
type Event struct {
	ID        string          `db:"id"`
	AccountID string          `db:"account_id"`
	Mode      Mode            `db:"mode"`
	Type      string          `db:"type"`
	Body      json.RawMessage `db:"body"`
	CreatedAt time.Time       `db:"created_at"`
	// Deliveries is how many deliveries the event fanned out to when it was created: set by the
	// call that stores it (for metrics), zero on an event read back.
	Deliveries int `db:"-"`
}

// Page is one page of a newest-first list. NextCursor is the id to pass as ?cursor= for the next
// page, set only when HasMore.
type Page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// ListParams selects one page: at most Limit records older than the record named by Cursor.
type ListParams struct {
	Limit  int
	Cursor string
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The statuses of a delivery (API.md §4).
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliveryCanceled  DeliveryStatus = "canceled"
)

// Valid reports whether s is one of the four statuses.
func (s DeliveryStatus) Valid() bool {
	switch s {
	case DeliveryPending, DeliverySucceeded, DeliveryFailed, DeliveryCanceled:
		return true
	}
	return false
}

// Delivery is one event on its way to one endpoint: a series of attempts on the retry schedule,
// run by one workflow. A redelivery starts a new series on the same record; Series counts them.
type Delivery struct {
	ID             string            `json:"id" db:"id"`
	EventID        string            `json:"event_id" db:"event_id"`
	EventType      string            `json:"event_type" db:"event_type"`
	EndpointID     string            `json:"endpoint_id" db:"endpoint_id"`
	AccountID      string            `json:"-" db:"account_id"`
	Mode           Mode              `json:"mode" db:"mode"`
	Status         DeliveryStatus    `json:"status" db:"status"`
	AttemptCount   int               `json:"attempt_count" db:"attempt_count"`
	NextAttemptAt  *time.Time        `json:"next_attempt_at" db:"next_attempt_at"`
	LastStatusCode *int              `json:"last_status_code" db:"last_status_code"`
	LastError      *string           `json:"last_error" db:"last_error"`
	Series         int               `json:"-" db:"series"`
	CreatedAt      time.Time         `json:"created_at" db:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at" db:"updated_at"`
	Attempts       []DeliveryAttempt `json:"attempts,omitempty" db:"-"`
}

// DeliveryAttempt is one POST to an endpoint and what came of it. Numbers run on across
// redeliveries, so every attempt of a delivery has its own.
type DeliveryAttempt struct {
	Number          int       `json:"number" db:"number"`
	StartedAt       time.Time `json:"started_at" db:"started_at"`
	DurationMS      int       `json:"duration_ms" db:"duration_ms"`
	StatusCode      *int      `json:"status_code" db:"status_code"`
	Error           *string   `json:"error" db:"error"`
	ResponseSnippet *string   `json:"response_snippet" db:"response_snippet"`
}

// PrefixRecovery starts a recovery's id.
const PrefixRecovery = "rcv"

// Recovery is one operation that redelivers every failed delivery of an endpoint created since
// a time, each exactly once, with its progress.
type Recovery struct {
	ID          string     `json:"id" db:"id"`
	AccountID   string     `json:"-" db:"account_id"`
	Mode        Mode       `json:"mode" db:"mode"`
	EndpointID  string     `json:"endpoint_id" db:"endpoint_id"`
	Since       time.Time  `json:"since" db:"since"`
	Status      string     `json:"status" db:"status"` // running, completed
	Total       int        `json:"total" db:"total"`   // the failed deliveries found when it began
	Redelivered int        `json:"redelivered" db:"redelivered"`
	CreatedAt   time.Time  `json:"created_at" db:"created_at"`
	CompletedAt *time.Time `json:"completed_at" db:"completed_at"`
}
