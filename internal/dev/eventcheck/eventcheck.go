// Package eventcheck validates events against the event catalogue's schemas in tests: the API
// and end-to-end tests check every event their flows emitted when they end.
package eventcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/bgcheck/bgcheck/webhook"
)

// Schemas compiles the catalogue's data schemas, by event type.
func Schemas() (map[string]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, et := range webhook.Catalogue() {
		raw, err := json.Marshal(et.Schema)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		url := "bgcheck:" + et.Type
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		if out[et.Type], err = c.Compile(url); err != nil {
			return nil, fmt.Errorf("%s: %w", et.Type, err)
		}
	}
	return out, nil
}

// ValidateData checks one event's data against its type's schema.
func ValidateData(schemas map[string]*jsonschema.Schema, eventType string, data []byte) error {
	s, ok := schemas[eventType]
	if !ok {
		return fmt.Errorf("no schema for event type %q", eventType)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// ValidateStored checks every event in the database the service emitted itself (test events,
// whose data the caller may choose, excepted) and fails t for each that does not match.
func ValidateStored(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	schemas, err := Schemas()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(context.Background(), `SELECT id, type, body FROM events WHERE NOT test_event ORDER BY id`)
	if err != nil {
		t.Errorf("reading the events to validate: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, typ string
		var body []byte
		if err := rows.Scan(&id, &typ, &body); err != nil {
			t.Error(err)
			return
		}
		var env webhook.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			t.Errorf("event %s: %v", id, err)
			continue
		}
		if err := ValidateData(schemas, typ, env.Data); err != nil {
			t.Errorf("event %s (%s) does not match its schema: %v\ndata: %s", id, typ, err, env.Data)
		}
	}
}
