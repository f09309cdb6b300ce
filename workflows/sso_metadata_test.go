package workflows_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/activities"
	"github.com/bgcheck/bgcheck/internal/dev/idptest"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
	"github.com/bgcheck/bgcheck/sso"
	"github.com/bgcheck/bgcheck/workflows"
)

// metadataHost serves an IdP's metadata at a URL of its own, fetched from the in-process
// samlidp at each request, and can be made to fail, the way an IdP's metadata URL goes down.
type metadataHost struct {
	mu       sync.Mutex
	upstream string // the samlidp whose /metadata is served
	failing  bool
	fetches  atomic.Int32
}

func (h *metadataHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.fetches.Add(1)
	h.mu.Lock()
	upstream, failing := h.upstream, h.failing
	h.mu.Unlock()
	if failing {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return
	}
	res, err := http.Get(upstream + "/metadata")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	_, _ = io.Copy(w, res.Body)
}

func (h *metadataHost) set(upstream string, failing bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.upstream, h.failing = upstream, failing
}

// metadataScene is a SAML connection whose metadata comes from a metadataHost in front of a
// samlidp, stored once and due to be fetched again.
type metadataScene struct {
	t    *testing.T
	db   *postgres.DB
	host *metadataHost
	url  string
	conn *bgcheck.SSOConnection
	acts *activities.SSOMetadata
}

func newMetadataScene(t *testing.T) *metadataScene {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	idp := idptest.StartSAML(t)
	host := &metadataHost{upstream: idp.URL}
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "owner@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	conn, err := db.CreateSSOConnection(ctx, postgres.NewSSOConnection{AccountID: acct.ID, Protocol: bgcheck.SSOProtocolSAML,
		Enabled: true, Domains: []string{"acme.test"}, SAMLIdPEntityID: idp.URL + "/metadata", SAMLIdPMetadataXML: string(idp.Metadata()),
		SAMLIdPMetadataURL: srv.URL + "/idp-metadata", SAMLMetadataNextRefresh: &past})
	if err != nil {
		t.Fatal(err)
	}
	allowed := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	return &metadataScene{t: t, db: db, host: host, url: srv.URL + "/idp-metadata", conn: conn,
		acts: &activities.SSOMetadata{DB: db, HTTP: sso.NewHTTPClient(allowed), Allowed: allowed, Log: slog.New(slog.DiscardHandler)}}
}

// run runs the schedule's workflow once, with the real activities, and returns how many
// connections it refreshed.
func (s *metadataScene) run() int {
	s.t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(workflows.SAMLMetadataRefreshWorkflow)
	env.RegisterActivity(s.acts)
	env.ExecuteWorkflow(workflows.SAMLMetadataRefreshWorkflow)
	var n int
	if err := env.GetWorkflowResult(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func (s *metadataScene) connection() *bgcheck.SSOConnection {
	s.t.Helper()
	c, err := s.db.FindSSOConnectionByID(context.Background(), s.conn.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// makeDue puts the connection's next refresh in the past, as time passing would.
func (s *metadataScene) makeDue() {
	s.t.Helper()
	if _, err := s.db.Pool().Exec(context.Background(), `UPDATE sso_connections SET saml_metadata_next_refresh_at = now() - interval '1 second'
		WHERE id = $1`, s.conn.ID); err != nil {
		s.t.Fatal(err)
	}
}

func near(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil || got.Sub(want).Abs() > time.Minute {
		t.Fatalf("%s is %v, want about %s", what, got, want)
	}
}

// The schedule's run fetches due metadata again from its URL and plans the next fetch; a fetch
// that fails is recorded on the connection in our words and retried later and later, the stored
// metadata staying in use; a later success forgets the failures. Nothing is fetched before it
// is due.
func TestSAMLMetadataIsRefreshedInTheBackground(t *testing.T) {
	s := newMetadataScene(t)

	if n := s.run(); n != 1 || s.host.fetches.Load() != 1 {
		t.Fatalf("refreshed %d, fetched %d times", n, s.host.fetches.Load())
	}
	c := s.connection()
	// samlidp's metadata is valid for two days and may be cached as long: fetched again daily.
	near(t, "the fetch", c.SAMLMetadataFetchedAt, time.Now())
	near(t, "the next refresh", c.SAMLMetadataNextRefresh, time.Now().Add(sso.MetadataRefreshInterval))
	if c.SAMLMetadataRefreshError != nil || c.SAMLMetadataValidTill == nil {
		t.Fatalf("after a refresh: error %v, valid until %v", c.SAMLMetadataRefreshError, c.SAMLMetadataValidTill)
	}
	if n := s.run(); n != 0 || s.host.fetches.Load() != 1 {
		t.Fatalf("a run before it was due refreshed %d, fetched %d times", n, s.host.fetches.Load())
	}

	s.host.set(s.host.upstream, true)
	s.makeDue()
	before := s.connection()
	if n := s.run(); n != 0 {
		t.Fatalf("refreshed %d from a failing URL", n)
	}
	c = s.connection()
	if c.SAMLMetadataRefreshError == nil || *c.SAMLMetadataRefreshError != "the metadata URL answered HTTP 503 (Service Unavailable), not 200" {
		t.Fatalf("refresh error %v", c.SAMLMetadataRefreshError)
	}
	near(t, "the failure", c.SAMLMetadataRefreshFailedAt, time.Now())
	near(t, "the retry", c.SAMLMetadataNextRefresh, time.Now().Add(5*time.Minute))
	if c.SAMLIdPMetadataXML != before.SAMLIdPMetadataXML || !c.SAMLMetadataFetchedAt.Equal(*before.SAMLMetadataFetchedAt) {
		t.Fatal("a failed refresh changed the stored metadata")
	}
	fetches := s.host.fetches.Load()
	if s.run(); s.host.fetches.Load() != fetches {
		t.Fatal("a failed refresh was tried again before its backoff")
	}
	s.makeDue()
	s.run()
	near(t, "the second retry", s.connection().SAMLMetadataNextRefresh, time.Now().Add(10*time.Minute))

	s.host.set(s.host.upstream, false)
	s.makeDue()
	if n := s.run(); n != 1 {
		t.Fatalf("refreshed %d after the URL came back", n)
	}
	c = s.connection()
	if c.SAMLMetadataRefreshError != nil || c.SAMLMetadataRefreshFailedAt != nil {
		t.Fatalf("the failure is remembered after a success: %v", *c.SAMLMetadataRefreshError)
	}
	near(t, "the next refresh", c.SAMLMetadataNextRefresh, time.Now().Add(sso.MetadataRefreshInterval))
}

// Several workers' runs at once fetch a due connection's metadata once: the refresh is claimed.
func TestSAMLMetadataRefreshIsClaimedOnce(t *testing.T) {
	s := newMetadataScene(t)
	var wg sync.WaitGroup
	outcomes := make([]string, 8)
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.acts.RefreshSAMLMetadata(context.Background(), s.conn.ID)
			if err != nil {
				t.Error(err)
			}
			outcomes[i] = out
		}()
	}
	wg.Wait()
	refreshed := 0
	for _, o := range outcomes {
		if o == activities.MetadataRefreshed {
			refreshed++
		}
	}
	if refreshed != 1 || s.host.fetches.Load() != 1 {
		t.Fatalf("outcomes %v, %d fetches", outcomes, s.host.fetches.Load())
	}
}

// A refresh that finds another IdP at the URL (another entity id) forgets the identities made
// under the old one, as an admin's change of metadata does: the new IdP's subjects must not sign
// in as the old IdP's users. A refresh of the same IdP keeps them.
func TestSAMLMetadataRefreshWithAnotherEntityIDForgetsIdentities(t *testing.T) {
	s := newMetadataScene(t)
	ctx := context.Background()
	if _, err := s.db.SignInWithSSO(ctx, s.conn, bgcheck.SSOIdentity{Subject: "owner", Email: "owner@acme.test", EmailVerified: true}); err != nil {
		t.Fatal(err)
	}
	identities := func() int {
		var n int
		if err := s.db.Pool().QueryRow(ctx, `SELECT count(*) FROM sso_identities WHERE connection_id = $1`, s.conn.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if s.run(); identities() != 1 || s.connection().LastSignInAt == nil {
		t.Fatalf("a refresh of the same IdP forgot %d identities", 1-identities())
	}

	other := idptest.StartSAML(t)
	s.host.set(other.URL, false)
	s.makeDue()
	if n := s.run(); n != 1 {
		t.Fatalf("refreshed %d", n)
	}
	c := s.connection()
	if c.SAMLIdPEntityID != other.URL+"/metadata" || identities() != 0 || c.LastSignInAt != nil {
		t.Fatalf("entity %s, %d identities, last sign-in %v", c.SAMLIdPEntityID, identities(), c.LastSignInAt)
	}
	if ok, err := s.db.SSOSessionValid(ctx, mustUser(t, s.db, "owner@acme.test"), c.ID); err != nil || ok {
		t.Fatalf("the old IdP's session goes on: %v %v", ok, err)
	}
}

func mustUser(t *testing.T, db *postgres.DB, email string) string {
	t.Helper()
	u, _, err := db.FindUserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}
