package main

import (
	"io"
	"net/url"
	"text/template"

	"github.com/bgcheck/bgcheck/internal/dev/devenv"
)

// banner is what a developer needs to start trying the API.
type banner struct {
	BaseURL         string
	DatabaseURL     string
	StartedPostgres bool
	Demo            devenv.Demo
	DemoCreated     bool
	DemoFile        string
	TemporalAddress string
	TemporalUI      string
	RetrySchedule   string
	ReceiverURL     string
}

// The curl lines stay copy-pasteable in bash and zsh: the key goes in a variable, and the
// candidate's id is picked out of the compact JSON with grep and cut (no jq needed).
var bannerTemplate = template.Must(template.New("banner").Parse(`
bgcheck is running at {{.BaseURL}}
  database  {{.DatabaseURL}}{{if .StartedPostgres}} (PostgreSQL started here, from ./.data/postgres){{end}}
  account   {{.Demo.AccountID}} ({{if .DemoCreated}}created now{{else}}reused{{end}}; kept in {{.DemoFile}})
  test key  {{.Demo.TestKey}}
  live key  {{.Demo.LiveKey}}
  admin     {{.Demo.AdminEmail}} / {{.Demo.AdminPassword}}
  temporal  {{.TemporalAddress}}{{if .TemporalUI}} (Web UI {{.TemporalUI}}){{end}}; one worker runs here
  retries   after {{.RetrySchedule}} (BGCHECK_RETRY_SCHEDULE, e.g. 5s,10s to watch retries quickly)
  receiver  {{.ReceiverURL}} is the test key's endpoint {{.Demo.ReceiverEndpointID}}; each delivery it
            gets is printed below, with whether its signature holds

Watch a signed webhook arrive:

  curl -sS -X POST {{.BaseURL}}/api/v1/events/test -H "X-API-Key: {{.Demo.TestKey}}" -H 'Content-Type: application/json' -d '{"type":"check.completed"}'
{{if .TemporalUI}}
  and find its delivery in the Temporal UI: {{.TemporalUI}}/namespaces/default/workflows?query=EventType%3D%22check.completed%22
{{end}}
Try it, in test mode:

  export BGCHECK_KEY={{.Demo.TestKey}}

  # create a webhook endpoint (its signing secret is shown this once); to receive its deliveries,
  # in another terminal: BGCHECK_WEBHOOK_SECRET=<the secret> go run ./docs/examples/receiver
  curl -sS -X POST {{.BaseURL}}/api/v1/webhooks/endpoints -H "X-API-Key: $BGCHECK_KEY" -H 'Content-Type: application/json' -d '{"url":"http://127.0.0.1:9000/webhooks","events":["*"]}'

  # list webhook endpoints
  curl -sS {{.BaseURL}}/api/v1/webhooks/endpoints -H "X-API-Key: $BGCHECK_KEY"

  # create a candidate and keep its id
  RESPONSE=$(curl -sS -X POST {{.BaseURL}}/api/v1/candidates -H "X-API-Key: $BGCHECK_KEY" -H 'Content-Type: application/json' -d '{"first_name":"Jane","last_name":"Doe","email":"jane@example.com"}'); echo "$RESPONSE"
  CANDIDATE=$(echo "$RESPONSE" | grep -o '"id":"[^"]*"' | head -n 1 | cut -d '"' -f 4)

  # change the candidate
  curl -sS -X PATCH {{.BaseURL}}/api/v1/candidates/$CANDIDATE -H "X-API-Key: $BGCHECK_KEY" -H 'Content-Type: application/json' -d '{"phone":"+14155550100"}'

  # send a test event to every endpoint subscribed to its type, and see the deliveries
  curl -sS -X POST {{.BaseURL}}/api/v1/events/test -H "X-API-Key: $BGCHECK_KEY" -H 'Content-Type: application/json' -d '{"type":"check.completed"}'
  curl -sS {{.BaseURL}}/api/v1/events -H "X-API-Key: $BGCHECK_KEY"

Run a whole background check in the sandbox (a day of the provider's time is a second here):

  # a check of the basic package: the candidate is mailed an invitation; without SMTP its link
  # is logged below ("the check invitation is logged"): copy the token after token=
  CHECK=$(curl -sS -X POST {{.BaseURL}}/api/v1/checks -H "X-API-Key: $BGCHECK_KEY" -H 'Content-Type: application/json' -d "{\"candidate_id\":\"$CANDIDATE\",\"package\":\"basic\"}" | grep -o '"id":"chk_[^"]*"' | cut -d '"' -f 4); echo "$CHECK"
  INVITATION=<the token from the logged link>

  # the candidate signs in with it, reads the disclosure and consents (SSN 111-11-2002: a record is found)
  CANDIDATE_TOKEN=$(curl -sS -X POST {{.BaseURL}}/api/v1/auth/invitation -H 'Content-Type: application/json' -d "{\"token\":\"$INVITATION\"}" | grep -o '"access_token":"[^"]*"' | cut -d '"' -f 4)
  curl -sS {{.BaseURL}}/api/v1/consumer/checks/$CHECK -H "Authorization: Bearer $CANDIDATE_TOKEN"
  curl -sS -X POST {{.BaseURL}}/api/v1/consumer/checks/$CHECK/authorize -H "Authorization: Bearer $CANDIDATE_TOKEN" -H 'Content-Type: application/json' -d '{"ssn":"111-11-2002","address":"1 Main St, Springfield","consent":true}'

  # a few seconds later: complete, assessment consider; check.completed and report.ready reached the receiver
  curl -sS {{.BaseURL}}/api/v1/checks/$CHECK/report -H "X-API-Key: $BGCHECK_KEY"
{{if .TemporalUI}}
Find a delivery's workflow in the Temporal UI by event, endpoint, type or status, e.g.
  {{.TemporalUI}}/namespaces/default/workflows?query=EventType%3D%22check.completed%22
  (other keys: EventId, EndpointId, AccountId, DeliveryStatus; the workflow id is the delivery id)
{{end}}
The API's OpenAPI document is at {{.BaseURL}}/api/v1/openapi.json. Ctrl-C stops the API, the worker{{if .TemporalUI}}, Temporal{{end}}{{if .StartedPostgres}} and PostgreSQL{{end}}.

`))

// printBanner writes the banner; the database URL is shown without any password.
func printBanner(w io.Writer, b banner) {
	if u, err := url.Parse(b.DatabaseURL); err == nil {
		b.DatabaseURL = u.Redacted()
	}
	_ = bannerTemplate.Execute(w, b)
}
