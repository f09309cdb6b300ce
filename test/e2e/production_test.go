package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The binaries run in production mode unless told otherwise and refuse to start with settings
// that are only safe on a developer's machine, one line per variable.
func TestWorkerBinaryRefusesUnsafeSettingsInProductionMode(t *testing.T) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BGCHECK_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(workerBinary(t))
	cmd.Env = append(env, "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS=true",
		"DATABASE_URL=postgres://bgcheck@db.example.internal/bgcheck?sslmode=disable")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; output:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"BGCHECK_SMTP_URL", "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS", "DATABASE_URL", "BGCHECK_SECRETS_KEY"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q does not name %s", i+1, lines[i], w)
		}
	}
}
