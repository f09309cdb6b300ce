package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/postgres/pgtest"
)

// The agency resolves a live-mode dispute, which no API key may: the report is revised and the
// events written as by the API. Unknown ids and resolutions are refused with a clear line.
func TestDisputesResolve(t *testing.T) {
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, _, err := db.Bootstrap(ctx, "Acme", postgres.NewUser{Email: "admin@acme.test", Role: bgcheck.RoleAdmin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := bgcheck.Tenant{AccountID: acct.ID, Mode: bgcheck.ModeLive}
	email := "jane@example.com"
	cand, err := db.CreateCandidate(ctx, live, bgcheck.Candidate{FirstName: "Jane", LastName: "Doe", Email: &email})
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateCheck(ctx, live, postgres.NewCheck{CandidateID: cand.ID, Package: "basic",
		Screenings: []string{"ssn_trace", "national_criminal"}, InvitationTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for typ, result := range map[string]string{"ssn_trace": "clear", "national_criminal": "consider"} {
		if err := db.RecordScreening(ctx, postgres.ScreeningUpdate{CheckID: c.ID, Type: typ, Status: "complete", Result: result}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CompleteCheck(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	consumer, err := db.CreateUser(ctx, postgres.NewUser{Email: email, Role: bgcheck.RoleConsumer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO candidate_users (candidate_id, user_id) VALUES ($1, $2)`, cand.ID, consumer.ID); err != nil {
		t.Fatal(err)
	}
	d, err := db.FileDispute(ctx, consumer.ID, c.ID, "national_criminal", "not mine")
	if err != nil {
		t.Fatal(err)
	}

	if _, err := ctl(t, "", "disputes", "resolve", d.ID, "--resolution", "withdrawn"); err == nil || !strings.Contains(err.Error(), "--resolution") {
		t.Fatalf("an unknown resolution: %v", err)
	}
	if _, err := ctl(t, "", "disputes", "resolve", "dsp_00000000000000000000000000000000", "--resolution", "verified"); err == nil ||
		!strings.Contains(err.Error(), "no dispute") {
		t.Fatalf("an unknown dispute: %v", err)
	}
	out, err := ctl(t, "", "disputes", "resolve", d.ID, "--resolution", "deleted", "--note", "could not be verified")
	if err != nil {
		t.Fatal(err)
	}
	var got bgcheck.Dispute
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Status != bgcheck.DisputeResolved || *got.ResolvedBy != bgcheck.ResolvedByOperator {
		t.Fatalf("printed %s (%v)", out, err)
	}
	after, err := db.FindCheck(ctx, live, c.ID)
	if err != nil || after.Status != bgcheck.CheckComplete || *after.Assessment != bgcheck.AssessmentClear {
		t.Fatalf("the check after the deletion: %+v %v", after, err)
	}
	if _, err := ctl(t, "", "disputes", "resolve", d.ID, "--resolution", "verified"); bgcheck.ErrorCode(err) != bgcheck.CodeDisputeResolved {
		t.Fatalf("resolving twice: %v", err)
	}
}
