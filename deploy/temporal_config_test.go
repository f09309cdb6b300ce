package deploy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
)

// The compose file's Temporal runs with the dynamic config make dev, the tests and the benchmark
// use: deploy/temporal-dynamicconfig.yaml is devtemporal.Tuned(), mounted where
// DYNAMIC_CONFIG_FILE_PATH points.
func TestComposeTemporalRunsTheTunedDynamicConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "temporal-dynamicconfig.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			body = append(body, line)
		}
	}
	if got, want := strings.Join(body, ""), devtemporal.DynamicConfigYAML(devtemporal.Tuned()); got != want {
		t.Fatalf("deploy/temporal-dynamicconfig.yaml differs from devtemporal.Tuned():\n%s\nwant:\n%s", got, want)
	}
	s := service(t, loadProject(t), svcTemporal)
	path := env(t, s, "DYNAMIC_CONFIG_FILE_PATH")
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && filepath.Base(v.Source) == "temporal-dynamicconfig.yaml" &&
			v.Target == "/etc/temporal/"+path && v.ReadOnly {
			return
		}
	}
	t.Fatalf("temporal does not mount deploy/temporal-dynamicconfig.yaml read-only at /etc/temporal/%s: %+v", path, s.Volumes)
}
