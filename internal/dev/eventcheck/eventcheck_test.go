package eventcheck_test

import (
	"encoding/json"
	"testing"

	"github.com/bgcheck/bgcheck/internal/dev/eventcheck"
	"github.com/bgcheck/bgcheck/webhook"
)

// Every type has a schema, the sample data of test events matches it, and the schemas refuse
// what they should (a field too many, a field missing, a wrong value).
func TestCatalogueSchemas(t *testing.T) {
	schemas, err := eventcheck.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != len(webhook.EventTypes) {
		t.Fatalf("%d schemas for %d event types", len(schemas), len(webhook.EventTypes))
	}
	for _, typ := range webhook.EventTypes {
		raw, _ := json.Marshal(webhook.SampleData(typ))
		if err := eventcheck.ValidateData(schemas, typ, raw); err != nil {
			t.Errorf("the sample of %s: %v", typ, err)
		}
	}
	for name, tc := range map[string]struct{ typ, data string }{
		"extra field":     {webhook.EventCheckCompleted, `{"check_id":"0193f5a0-c3d8-7e4b-9a1c-2d3e4f506172","status":"complete","disposition":"clear","x":1}`},
		"missing field":   {webhook.EventCheckCompleted, `{"check_id":"0193f5a0-c3d8-7e4b-9a1c-2d3e4f506172","status":"complete"}`},
		"wrong value":     {webhook.EventCheckCompleted, `{"check_id":"0193f5a0-c3d8-7e4b-9a1c-2d3e4f506172","status":"complete","disposition":"maybe"}`},
		"not a uuid":      {webhook.EventCheckFailed, `{"check_id":"chk_1","status":"failed","reason":"x"}`},
		"bad resolution":  {webhook.EventDisputeResolved, `{"check_id":"0193f5a0-c3d8-7e4b-9a1c-2d3e4f506172","dispute_id":"dsp_0193f5a0c3d87e4b9a1c2d3e4f506172","status":"resolved","screening":"ssn_trace","resolution":"ignored"}`},
		"not a date-time": {webhook.EventDisputeFiled, `{"check_id":"0193f5a0-c3d8-7e4b-9a1c-2d3e4f506172","dispute_id":"dsp_0193f5a0c3d87e4b9a1c2d3e4f506172","status":"open","screening":"ssn_trace","due_at":"tomorrow"}`},
	} {
		if err := eventcheck.ValidateData(schemas, tc.typ, []byte(tc.data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
