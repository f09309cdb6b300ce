package activities

import (
	"context"

	"github.com/bgcheck/bgcheck/postgres"
)

// Recoveries holds what a recovery's activities need.
type Recoveries struct {
	DB *postgres.DB
}

// RecoveryPageInput asks for the next page of a recovery's failed deliveries.
type RecoveryPageInput struct {
	RecoveryID string
	After      string
	Limit      int
}

// ListRecoveryPage returns the next page of the recovery's failed deliveries, in id order.
func (r *Recoveries) ListRecoveryPage(ctx context.Context, in RecoveryPageInput) ([]string, error) {
	return r.DB.RecoveryPage(ctx, in.RecoveryID, in.After, in.Limit)
}

// RedeliverInput is one page of a recovery to redeliver.
type RedeliverInput struct {
	RecoveryID  string
	DeliveryIDs []string
}

// RedeliverPage redelivers a page of failed deliveries, each exactly once for the recovery
// however often the activity is retried.
func (r *Recoveries) RedeliverPage(ctx context.Context, in RedeliverInput) error {
	return r.DB.RedeliverForRecovery(ctx, in.RecoveryID, in.DeliveryIDs)
}

// CompleteRecovery marks the recovery done.
func (r *Recoveries) CompleteRecovery(ctx context.Context, recoveryID string) error {
	return r.DB.CompleteRecovery(ctx, recoveryID)
}
