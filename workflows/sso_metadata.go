package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/bgcheck/bgcheck/activities"
)

// SSOMetadataScheduleID is the Temporal Schedule that runs SAMLMetadataRefreshWorkflow.
const SSOMetadataScheduleID = "bgcheck-sso-metadata"

// SSOMetadataScheduleEvery is how often the schedule looks for metadata due to be fetched
// again. Each connection's own due time (daily, or sooner at its cacheDuration or validUntil;
// later after failures) decides whether it is.
const SSOMetadataScheduleEvery = 15 * time.Minute

// SAMLMetadataRefreshWorkflow fetches again the IdP metadata of every SAML connection due for
// it, and returns how many it refreshed. A fetch that fails is recorded on its connection, with
// the time of the next try, and does not fail the run; runs of the schedule never overlap, and
// each refresh is claimed in the database, so several workers never fetch one twice.
func SAMLMetadataRefreshWorkflow(ctx workflow.Context) (int, error) {
	var acts *activities.SSOMetadata
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// A fetch takes at most sso.FetchTimeout; the rest is the database.
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 5},
	})
	var due []string
	if err := workflow.ExecuteActivity(ctx, acts.DueSAMLMetadata).Get(ctx, &due); err != nil {
		return 0, err
	}
	futures := make([]workflow.Future, len(due))
	for i, id := range due {
		futures[i] = workflow.ExecuteActivity(ctx, acts.RefreshSAMLMetadata, id)
	}
	refreshed := 0
	var firstErr error
	for _, f := range futures {
		var outcome string
		err := f.Get(ctx, &outcome)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if outcome == activities.MetadataRefreshed {
			refreshed++
		}
	}
	return refreshed, firstErr
}
