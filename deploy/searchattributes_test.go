package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal/temporaltest"
	"github.com/bgcheck/bgcheck/workflows"
)

// TestSearchAttributeScriptRegistersThemInTemporal runs the compose file's registration script,
// as docker-compose.yml gives it (entrypoint, command, environment), against a Temporal dev
// server with the pinned CLI in place of the admin-tools image's: it registers every attribute,
// runs again without complaint (docker compose up starts it at every up), and fails on any
// other error.
func TestSearchAttributeScriptRegistersThemInTemporal(t *testing.T) {
	t.Parallel()
	s := service(t, loadProject(t), svcSearchAttributes)
	if len(s.Entrypoint) == 0 {
		t.Fatalf("%s has no entrypoint: the test runs its entrypoint and command", svcSearchAttributes)
	}
	srv := temporaltest.Start(t, devtemporal.Options{})
	bin, err := devtemporal.Binary(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The script calls `temporal`, as on the admin-tools image's PATH.
	binDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(binDir, "temporal")); err != nil {
		t.Fatal(err)
	}

	run := func(override map[string]string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		argv := append(append([]string{}, s.Entrypoint...), s.Command...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for k, v := range s.Environment {
			if v != nil {
				cmd.Env = append(cmd.Env, k+"="+*v)
			}
		}
		cmd.Env = append(cmd.Env, "TEMPORAL_ADDRESS="+srv.Address)
		for k, v := range override {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	for _, round := range []string{"first run", "second run"} {
		out, err := run(nil)
		t.Logf("%s:\n%s", round, out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", round, err, out)
		}
	}
	c, err := client.Dial(client.Options{HostPort: srv.Address, Namespace: devtemporal.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listed, err := c.OperatorService().ListSearchAttributes(context.Background(),
		&operatorservice.ListSearchAttributesRequest{Namespace: devtemporal.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range workflows.SearchAttributes {
		if typ := listed.GetCustomAttributes()[name]; typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("after the script, search attribute %s has type %s, want Keyword", name, typ)
		}
	}

	// Any error but "already exists" stops the script, so that compose does not start the API.
	out, err := run(map[string]string{"SEARCH_ATTRIBUTES": "WorkflowId"})
	if err == nil {
		t.Errorf("registering the reserved WorkflowId succeeded:\n%s", out)
	} else if !strings.Contains(out, "WorkflowId") {
		t.Errorf("registering WorkflowId failed, but the script does not say why:\n%s", out)
	}
	t.Logf("registering WorkflowId: %v\n%s", err, out)
}
