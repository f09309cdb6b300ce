package webhook_test

import (
	"fmt"

	"github.com/bgcheck/bgcheck/webhook"
)

// A receiver checks the signature over the raw bytes it received, with the endpoint's secret.
func ExampleVerify() {
	secret := "whsec_example"
	body := []byte(`{"id":"evt_1","type":"report.ready","created_at":"2026-11-21T05:24:00Z","data":{}}`)
	header := webhook.Sign(secret, body) // what bgcheck sends in X-Service-Signature

	fmt.Println(webhook.Verify(secret, body, header))
	fmt.Println(webhook.Verify(secret, append(body, ' '), header))
	// Output:
	// <nil>
	// webhook: signature does not match the body
}
