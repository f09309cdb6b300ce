package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/bgcheck/bgcheck/mail/mailtest"
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
	var envs []webhook.Envelope
	for _, h := range rc.got() {
		var env webhook.Envelope
		if err := json.Unmarshal(h.body, &env); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	slices.SortFunc(envs, func(a, b webhook.Envelope) int { return strings.Compare(a.ID, b.ID) })
	var order []string
	for _, env := range envs {
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
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
