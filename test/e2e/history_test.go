package e2e

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
)

var flagUpdateHistory = flag.Bool("update-history", false,
	"write the histories of real runs (a delivery's three attempts and two sleeps; a check's consent, screenings and report; an adverse action held and released by disputes; a dispute) to workflows/testdata for the replay tests")

// saveHistory writes a workflow's history to workflows/testdata/name, as the replay tests read it.
func saveHistory(t testing.TB, tc client.Client, workflowID, name string) {
	t.Helper()
	iter := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, 0)
	var h historypb.History
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	raw, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "workflows", "testdata", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d events)", path, len(h.Events))
}
