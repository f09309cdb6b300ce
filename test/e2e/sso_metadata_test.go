package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/workflows"
)

// The worker creates the SSO metadata schedule on the dev server; a run fetches again the
// metadata of a SAML connection that is due, from the in-process samlidp.
func TestTheSSOMetadataScheduleRefreshesDueMetadata(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	s.cfg.SSOPrivateNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	idp := idptest.StartSAML(t)
	ctx := context.Background()
	var accountID string
	if err := s.db.Pool().QueryRow(ctx, `SELECT id FROM accounts LIMIT 1`).Scan(&accountID); err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(-time.Hour)
	conn, err := s.db.CreateSSOConnection(ctx, postgres.NewSSOConnection{AccountID: accountID, Protocol: bgcheck.SSOProtocolSAML,
		Domains: []string{"e2e.test"}, SAMLIdPEntityID: idp.URL + "/metadata", SAMLIdPMetadataXML: string(idp.Metadata()),
		SAMLIdPMetadataURL: idp.URL + "/metadata", SAMLMetadataNextRefresh: &due})
	if err != nil {
		t.Fatal(err)
	}
	s.startWorker()
	tc := s.temporalClient()
	schedule := tc.ScheduleClient().GetHandle(ctx, workflows.SSOMetadataScheduleID)
	waitFor(t, 30*time.Second, "the worker creates the SSO metadata schedule", func() bool {
		_, err := schedule.Describe(ctx)
		return err == nil
	})
	if err := schedule.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the schedule's run refreshes the metadata", func() bool {
		c, err := s.db.FindSSOConnectionByID(ctx, conn.ID)
		return err == nil && c.SAMLMetadataNextRefresh != nil && c.SAMLMetadataNextRefresh.After(time.Now().Add(time.Hour)) &&
			c.SAMLMetadataRefreshError == nil
	})
}
