package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck"
	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/mail/mailtest"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/webhook"
	"github.com/bgcheck/bgcheck/workflows"
)

// bearerCall sends a request with an access token and decodes the answer into out.
func (s *stack) bearerCall(token, method, path string, body any, wantStatus int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.apiURL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != wantStatus {
		s.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

var invitationLink = regexp.MustCompile(`https://portal\.example\.com/invitation\?token=[A-Za-z0-9_-]+`)

// A whole check in the sandbox, over real HTTP, SMTP, PostgreSQL and Temporal: a candidate, a
// check, the invitation mail from a real SMTP server, the candidate's consent through the
// consumer portal, the screenings, and the events check.created, check.completed (signed, with a
// UUID check_id and exactly {check_id, status, disposition}) and report.ready reaching a receiver,
// created in that order. Another candidate's consumer sees nothing of it.
func TestACheckFromInvitationToReport(t *testing.T) {
	t.Parallel()
	s := newStack(t, 0)
	inbox := mailtest.NewServer(t, mailtest.Options{})
	s.cfg.SMTPURL = "smtp://" + inbox.Addr + "?from=bgcheck%40example.com"
	s.cfg.PortalURL = "https://portal.example.com"
	s.cfg.SandboxSpeed = 864000 // a county search's three days in 0.3 s
	s.startAPI()
	s.startWorker()

	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ep := s.createEndpoint(rc.URL + "/hooks")
	rc.secret = ep.Secret

	var cand struct{ ID string }
	s.call("POST", "/api/v1/candidates", map[string]any{"first_name": "Jane", "last_name": "Doe", "email": "jane@example.com", "dob": "1990-04-01"}, http.StatusCreated, &cand)
	var other struct{ ID string }
	s.call("POST", "/api/v1/candidates", map[string]any{"first_name": "Olga", "last_name": "Other", "email": "olga@example.com"}, http.StatusCreated, &other)

	var check struct {
		ID, CheckID, Status string
		Screenings          []struct{ Type, Status string }
	}
	var checkJSON map[string]any
	s.call("POST", "/api/v1/checks", map[string]any{"candidate_id": cand.ID, "package": "basic"}, http.StatusCreated, &checkJSON)
	raw, _ := json.Marshal(checkJSON)
	_ = json.Unmarshal(raw, &struct {
		ID         *string `json:"id"`
		CheckID    *string `json:"check_id"`
		Status     *string `json:"status"`
		Screenings *[]struct{ Type, Status string }
	}{&check.ID, &check.CheckID, &check.Status, &check.Screenings})
	if check.Status != "invitation_pending" || len(check.Screenings) != 2 || !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(check.CheckID) {
		t.Fatalf("created check %s", raw)
	}
	// The other candidate's check, whose consumer must see nothing of Jane's.
	var otherCheck struct{ ID string }
	s.call("POST", "/api/v1/checks", map[string]any{"candidate_id": other.ID, "package": "basic"}, http.StatusCreated, &otherCheck)

	msg := inbox.WaitFor(t, "jane@example.com", 30*time.Second)
	link := invitationLink.FindString(msg.Text)
	if link == "" {
		t.Fatalf("no invitation link in %q", msg.Text)
	}
	u, _ := url.Parse(link)
	var session struct {
		AccessToken string `json:"access_token"`
		CheckID     string `json:"check_id"`
	}
	s.bearerCall("", "POST", "/api/v1/auth/invitation", map[string]any{"token": u.Query().Get("token")}, http.StatusOK, &session)
	if session.CheckID != check.ID {
		t.Fatalf("the invitation signs in to %s, want %s", session.CheckID, check.ID)
	}
	var mine struct {
		Disclosure string `json:"disclosure"`
		Status     string `json:"status"`
	}
	s.bearerCall(session.AccessToken, "GET", "/api/v1/consumer/checks/"+check.ID, nil, http.StatusOK, &mine)
	if !strings.Contains(mine.Disclosure, "consumer report") || mine.Status != "invitation_pending" {
		t.Fatalf("the candidate sees %+v", mine)
	}
	s.bearerCall(session.AccessToken, "GET", "/api/v1/consumer/checks/"+otherCheck.ID, nil, http.StatusNotFound, nil)
	var authorized map[string]any
	s.bearerCall(session.AccessToken, "POST", "/api/v1/consumer/checks/"+check.ID+"/authorize",
		map[string]any{"ssn": "111-11-2002", "address": "1 Main St, Springfield", "consent": true}, http.StatusOK, &authorized)
	if authorized["ssn_last4"] != "2002" || strings.Contains(mustJSON(authorized), "111-11") {
		t.Fatalf("authorized check shows %v", authorized)
	}

	waitFor(t, 60*time.Second, "the check completes", func() bool {
		var c struct{ Status string }
		s.call("GET", "/api/v1/checks/"+check.ID, nil, http.StatusOK, &c)
		return c.Status == "complete"
	})
	if *flagUpdateHistory {
		saveHistory(t, s.temporalClient(), workflows.CheckWorkflowID(check.ID), "check_history.json")
	}
	var report struct {
		ID         string `json:"id"`
		CheckID    string `json:"check_id"`
		Assessment string `json:"assessment"`
	}
	s.call("GET", "/api/v1/checks/"+check.ID+"/report", nil, http.StatusOK, &report)
	if report.Assessment != "consider" || report.CheckID != check.CheckID {
		t.Fatalf("report %+v", report)
	}
	var reports struct{ Data []struct{ ID string } }
	s.bearerCall(session.AccessToken, "GET", "/api/v1/consumer/reports", nil, http.StatusOK, &reports)
	if len(reports.Data) != 1 || reports.Data[0].ID != report.ID {
		t.Fatalf("the candidate's reports %+v", reports)
	}

	waitFor(t, 30*time.Second, "the events reach the receiver", func() bool {
		return len(rc.got()) >= 4 // Jane's check.created, Olga's check.created, check.completed, report.ready
	})
	// Deliveries run in parallel, so they may arrive in any order (as with Checkr's); the events
	// were created in this order, which their ids (time-ordered) and created_at say.
	var order []string
	for _, env := range rc.envelopesInCreationOrder(t) {
		var data map[string]any
		_ = json.Unmarshal(env.Data, &data)
		if data["check_id"] != check.CheckID {
			continue
		}
		order = append(order, env.Type)
		if env.Type == webhook.EventCheckCompleted {
			if len(data) != 3 || data["status"] != "complete" || data["disposition"] != "consider" {
				t.Errorf("check.completed data %v", data)
			}
		}
		if env.Type == webhook.EventReportReady && (data["report_id"] != report.ID || data["candidate_id"] != cand.ID) {
			t.Errorf("report.ready data %v", data)
		}
	}
	if strings.Join(order, ",") != "check.created,check.completed,report.ready" {
		t.Fatalf("events for the check, in order: %v", order)
	}
	for _, h := range rc.got() {
		if !h.sigOK {
			t.Error("a delivery's signature does not verify")
		}
	}

	// The employer starts an adverse action: the candidate is mailed the pre-adverse notice,
	// with the reasons and the link to their report, and adverse_action.created is delivered.
	var aa struct {
		ID, Status string
	}
	s.call("POST", "/api/v1/checks/"+check.ID+"/adverse-actions", map[string]any{"reasons": []string{"a record relevant to the role"}}, http.StatusCreated, &aa)
	waitFor(t, 30*time.Second, "the pre-adverse notice", func() bool {
		for _, m := range inbox.Messages() {
			if strings.Contains(m.Header.Get("Subject"), "Pre-adverse") && strings.Contains(m.Text, "a record relevant to the role") &&
				strings.Contains(m.Text, "/reports/"+check.ID) {
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, "adverse_action.created delivered", func() bool {
		for _, h := range rc.got() {
			if h.header.Get("X-Service-Event-Type") == webhook.EventAdverseActionCreated && strings.Contains(string(h.body), aa.ID) {
				return true
			}
		}
		return false
	})
	s.call("POST", "/api/v1/adverse-actions/"+aa.ID+"/cancel", nil, http.StatusOK, &aa)
	if aa.Status != "canceled" {
		t.Fatalf("adverse action after cancel: %s", aa.Status)
	}
	tc := s.temporalClient()
	waitFor(t, 30*time.Second, "the adverse action's workflow canceled", func() bool {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), workflows.AdverseActionWorkflowID(aa.ID), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})

	s.disputeTheReport(rc, session.AccessToken, check.ID, check.CheckID)
}

// disputeTheReport goes on from a complete consider check whose adverse action was withdrawn: a
// new adverse action; the candidate disputes the national criminal search from the consumer
// routes, which holds the adverse action's workflow (a signal); an admin, signed in over HTTP,
// resolves the dispute as verified (the workflow is released with the end moved out);
// a second dispute is resolved as corrected, which revises the report to clear, sends
// check.completed again, and withdraws the adverse action. Every event arrives signed, and the
// events of the check were created in the order the flow caused them.
func (s *stack) disputeTheReport(rc *receiver, consumerToken, checkID, checkUUID string) {
	t := s.t
	tc := s.temporalClient()
	var aa struct {
		ID, Status string
		OnHold     bool `json:"on_hold"`
	}
	s.call("POST", "/api/v1/checks/"+checkID+"/adverse-actions", map[string]any{"reasons": []string{"a record relevant to the role"}}, http.StatusCreated, &aa)
	waitFor(t, 30*time.Second, "the second adverse action's workflow", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), workflows.AdverseActionWorkflowID(aa.ID), "")
		return err == nil
	})
	admin := s.adminToken()
	dispute := func(reason string) (d struct{ ID, Status string }) {
		s.bearerCall(consumerToken, "POST", "/api/v1/consumer/reports/"+checkID+"/disputes",
			map[string]any{"screening": "national_criminal", "reason": reason}, http.StatusCreated, &d)
		return d
	}
	holdSignals := func(n int) {
		waitFor(t, 30*time.Second, fmt.Sprintf("%d hold signals reach the adverse action's workflow", n), func() bool {
			return countSignals(t, tc, workflows.AdverseActionWorkflowID(aa.ID)) >= n
		})
	}

	first := dispute("the record is not mine")
	s.call("GET", "/api/v1/adverse-actions/"+aa.ID, nil, http.StatusOK, &aa)
	if !aa.OnHold || aa.Status != "pending" {
		t.Fatalf("during the dispute the adverse action is %+v", aa)
	}
	holdSignals(1)
	// A dispute resolved before the dispatcher got to it never needs a workflow; this one is to
	// have one, whose history the replay test keeps.
	waitFor(t, 30*time.Second, "the dispute's workflow", func() bool {
		_, err := tc.DescribeWorkflowExecution(context.Background(), workflows.DisputeWorkflowID(first.ID), "")
		return err == nil
	})
	s.bearerCall(admin, "POST", "/api/v1/admin/disputes/"+first.ID+"/resolve", map[string]any{"resolution": "verified"}, http.StatusOK, nil)
	holdSignals(2)
	waitFor(t, 30*time.Second, "the dispute's workflow ends", func() bool {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), workflows.DisputeWorkflowID(first.ID), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})
	if *flagUpdateHistory {
		saveHistory(t, tc, workflows.DisputeWorkflowID(first.ID), "dispute_history.json")
	}

	second := dispute("the record was expunged")
	holdSignals(3)
	s.bearerCall(admin, "POST", "/api/v1/admin/disputes/"+second.ID+"/resolve",
		map[string]any{"resolution": "corrected", "note": "expunged in 2019"}, http.StatusOK, nil)
	var c struct{ Status, Assessment string }
	s.call("GET", "/api/v1/checks/"+checkID, nil, http.StatusOK, &c)
	s.call("GET", "/api/v1/adverse-actions/"+aa.ID, nil, http.StatusOK, &aa)
	if c.Status != "complete" || c.Assessment != "clear" || aa.Status != "canceled" {
		t.Fatalf("after the correction: check %+v, adverse action %+v", c, aa)
	}
	waitFor(t, 30*time.Second, "the adverse action's workflow canceled", func() bool {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), workflows.AdverseActionWorkflowID(aa.ID), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	if *flagUpdateHistory {
		saveHistory(t, tc, workflows.AdverseActionWorkflowID(aa.ID), "adverse_history.json")
	}

	want := []string{"check.created", "check.completed", "report.ready", "adverse_action.created", "adverse_action.created",
		"dispute.filed", "dispute.resolved", "dispute.filed", "dispute.resolved", "report.ready", "check.completed"}
	var order []string
	waitFor(t, 30*time.Second, "the dispute's events delivered", func() bool {
		order = order[:0]
		for _, env := range rc.envelopesInCreationOrder(t) {
			var data map[string]any
			_ = json.Unmarshal(env.Data, &data)
			if data["check_id"] == checkUUID {
				order = append(order, env.Type)
			}
		}
		return len(order) >= len(want)
	})
	if !slices.Equal(order, want) {
		t.Fatalf("events of the check, in order of creation: %v, want %v", order, want)
	}
	for _, h := range rc.got() {
		if !h.sigOK {
			t.Error("a delivery's signature does not verify")
		}
	}
}

// adminToken creates an admin of the stack's account with a password and signs in over HTTP.
func (s *stack) adminToken() string {
	s.t.Helper()
	const password = "correct horse battery"
	hash, err := auth.HashPassword(password)
	if err != nil {
		s.t.Fatal(err)
	}
	var accountID string
	if err := s.db.Pool().QueryRow(context.Background(), `SELECT account_id FROM api_keys LIMIT 1`).Scan(&accountID); err != nil {
		s.t.Fatal(err)
	}
	email := bgcheck.NewID("admin") + "@e2e.test"
	if _, err := s.db.CreateUser(context.Background(), postgres.NewUser{AccountID: accountID, Email: email,
		Role: bgcheck.RoleAdmin, PasswordHash: hash}); err != nil {
		s.t.Fatal(err)
	}
	var pair struct {
		AccessToken string `json:"access_token"`
	}
	s.bearerCall("", "POST", "/api/v1/auth/login", map[string]any{"email": email, "password": password}, http.StatusOK, &pair)
	return pair.AccessToken
}

// countSignals counts the signals in a workflow's history.
func countSignals(t testing.TB, tc client.Client, workflowID string) int {
	iter := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	n := 0
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			n++
		}
	}
	return n
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// envelopesInCreationOrder decodes the deliveries received, one per event, in the order the events
// were created (their ids are time-ordered).
func (r *receiver) envelopesInCreationOrder(t testing.TB) []webhook.Envelope {
	t.Helper()
	seen := map[string]bool{}
	var envs []webhook.Envelope
	for _, h := range r.got() {
		var env webhook.Envelope
		if err := json.Unmarshal(h.body, &env); err != nil {
			t.Fatal(err)
		}
		if !seen[env.ID] {
			seen[env.ID] = true
			envs = append(envs, env)
		}
	}
	slices.SortFunc(envs, func(a, b webhook.Envelope) int { return strings.Compare(a.ID, b.ID) })
	return envs
}
