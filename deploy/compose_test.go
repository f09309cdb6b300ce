package deploy_test

import (
	"cmp"
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// root is the repository root, where the Dockerfile and docker-compose.yml are.
const root = ".."

// The services the compose file must have, by role (issue 6: one host with everything).
const (
	svcPostgres         = "postgres"
	svcTemporal         = "temporal"
	svcSearchAttributes = "temporal-search-attributes"
	svcTemporalUI       = "temporal-ui"
	svcRedis            = "redis"
	svcMail             = "mailpit"
	svcMigrate          = "migrate"
	svcAPI              = "api"
	svcWorker           = "worker"
	svcProxy            = "proxy"
)

// scalable are the services `docker compose up --scale` multiplies.
var scalable = []string{svcAPI, svcWorker}

// loadProject loads docker-compose.yml as `docker compose` would with env as the only
// environment (no OS variables, no .env file), so that the test sees the file's defaults.
// requiredSecrets are the variables compose refuses to start without, with values for tests.
var requiredSecrets = []string{
	"BGCHECK_JWT_SIGNING_KEY=an-operator's-own-signing-key-0123456789abcdef",
	"BGCHECK_SECRETS_KEY=" + strings.Repeat("5e", 32),
}

// loadProject loads docker-compose.yml as compose would with env as the environment, which has
// the required secrets unless it sets them itself.
func loadProject(t *testing.T, env ...string) *types.Project {
	t.Helper()
	p, err := tryLoadProject(append(slices.Clone(requiredSecrets), env...)...)
	if err != nil {
		t.Fatalf("loading docker-compose.yml: %v", err)
	}
	return p
}

// tryLoadProject loads docker-compose.yml with exactly env as the environment.
func tryLoadProject(env ...string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(env),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(context.Background())
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return s
}

// env returns a service's environment variable, failing when it is not set.
func env(t *testing.T, s types.ServiceConfig, name string) string {
	t.Helper()
	v, ok := s.Environment[name]
	if !ok || v == nil {
		t.Fatalf("service %s: %s is not set", s.Name, name)
	}
	return *v
}

func TestComposeServicesHaveAnImageOrABuild(t *testing.T) {
	p := loadProject(t)
	for _, name := range []string{svcPostgres, svcTemporal, svcSearchAttributes, svcTemporalUI, svcRedis,
		svcMail, svcMigrate, svcAPI, svcWorker, svcProxy} {
		service(t, p, name)
	}
	for name, s := range p.Services {
		if s.Build != nil {
			dockerfile := s.Build.Dockerfile
			if dockerfile == "" {
				dockerfile = "Dockerfile"
			}
			if !filepath.IsAbs(dockerfile) {
				dockerfile = filepath.Join(s.Build.Context, dockerfile)
			}
			if _, err := os.Stat(dockerfile); err != nil {
				t.Errorf("service %s builds with %v", name, err)
			}
			continue
		}
		if s.Image == "" {
			t.Errorf("service %s has neither an image nor a build", name)
			continue
		}
		// Pinned: a version tag, not none (latest) nor latest itself.
		ref, _, _ := strings.Cut(s.Image, "@")
		_, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		if tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q is not pinned to a version tag", name, s.Image)
		}
	}
	// api, worker and migrate run the one image of this repository's Dockerfile, so a deploy
	// never mixes versions of the binaries.
	var images []string
	for _, name := range []string{svcAPI, svcWorker, svcMigrate} {
		s := service(t, p, name)
		if s.Build == nil || filepath.Clean(s.Build.Context) != mustAbs(t, root) {
			t.Errorf("service %s is not built from the repository's Dockerfile (build: %+v)", name, s.Build)
		}
		images = append(images, s.Image)
	}
	if len(slices.Compact(slices.Clone(images))) != 1 || images[0] == "" {
		t.Errorf("api, worker and migrate run images %q, want one named image", images)
	}
}

func TestComposeDependenciesResolve(t *testing.T) {
	p := loadProject(t)
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			target, ok := p.Services[dep]
			if !ok {
				t.Errorf("service %s depends on %s, which does not exist", name, dep)
				continue
			}
			switch d.Condition {
			case types.ServiceConditionStarted:
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable || len(target.HealthCheck.Test) == 0 {
					t.Errorf("service %s waits for %s to be healthy, but %s has no health check", name, dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				// A restart policy would start a finished one-shot again and again.
				if target.Restart != "" && target.Restart != types.RestartPolicyNo {
					t.Errorf("service %s waits for %s to complete, but %s restarts (%s)", name, dep, dep, target.Restart)
				}
			default:
				t.Errorf("service %s depends on %s with condition %q", name, dep, d.Condition)
			}
		}
	}
	if cycle := dependencyCycle(p); cycle != nil {
		t.Errorf("depends_on has a cycle: %s", strings.Join(cycle, " -> "))
	}
	// The order the stack needs: the schema and the search attributes before any bgcheck process
	// talks to the database or starts a workflow.
	for _, name := range scalable {
		s := service(t, p, name)
		for _, dep := range []string{svcMigrate, svcSearchAttributes} {
			if s.DependsOn[dep].Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("service %s does not wait for %s to complete", name, dep)
			}
		}
	}
	if service(t, p, svcAPI).DependsOn[svcRedis].Condition != types.ServiceConditionHealthy {
		t.Errorf("api does not wait for redis to be healthy")
	}
	if service(t, p, svcSearchAttributes).DependsOn[svcTemporal].Condition != types.ServiceConditionHealthy {
		t.Errorf("%s does not wait for temporal to be healthy", svcSearchAttributes)
	}
}

// dependencyCycle returns a cycle of depends_on, or nil.
func dependencyCycle(p *types.Project) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(string) []string
	visit = func(n string) []string {
		switch state[n] {
		case open:
			return append(slices.Clone(path[slices.Index(path, n):]), n)
		case done:
			return nil
		}
		state[n] = open
		path = append(path, n)
		for dep := range p.Services[n].DependsOn {
			if c := visit(dep); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, n := range slices.Sorted(maps.Keys(p.Services)) {
		if c := visit(n); c != nil {
			return c
		}
	}
	return nil
}

func TestComposePortsParseAndDoNotCollide(t *testing.T) {
	p := loadProject(t)
	type binding struct {
		service string
		hostIP  string
	}
	bound := map[string][]binding{} // "port/proto" -> bindings
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if port.Target == 0 {
				t.Errorf("service %s publishes %+v without a container port", name, port)
			}
			if port.HostIP != "" && net.ParseIP(port.HostIP) == nil {
				t.Errorf("service %s publishes on host address %q, not an IP address", name, port.HostIP)
			}
			if port.Published == "" {
				continue // an ephemeral host port, picked by Docker: cannot collide
			}
			lo, hi, err := portRange(port.Published)
			if err != nil {
				t.Errorf("service %s: published port %q: %v", name, port.Published, err)
				continue
			}
			proto := cmp.Or(port.Protocol, "tcp")
			for n := lo; n <= hi; n++ {
				key := strconv.Itoa(n) + "/" + proto
				for _, other := range bound[key] {
					if sameOrWildcard(other.hostIP, port.HostIP) {
						t.Errorf("host port %s is published by both %s and %s", key, other.service, name)
					}
				}
				bound[key] = append(bound[key], binding{name, port.HostIP})
			}
		}
	}
	// Scaled services publish no fixed host port (each copy would want it) and have no
	// container_name (each copy would want it too).
	for _, name := range scalable {
		s := service(t, p, name)
		if s.ContainerName != "" {
			t.Errorf("service %s has container_name %q: it cannot be scaled", name, s.ContainerName)
		}
		for _, port := range s.Ports {
			if port.Published != "" {
				t.Errorf("service %s publishes host port %s: scaling it would collide", name, port.Published)
			}
		}
	}
	// The API is reached through the proxy, on one published port.
	proxy := service(t, p, svcProxy)
	if len(proxy.Ports) != 1 || proxy.Ports[0].Published == "" {
		t.Errorf("proxy publishes %+v, want one fixed host port", proxy.Ports)
	}
}

func portRange(s string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	if lo < 1 || hi > 65535 || lo > hi {
		return 0, 0, strconv.ErrRange
	}
	return lo, hi, nil
}

// sameOrWildcard says whether two host addresses of a published port overlap: equal, or one of
// them is every address.
func sameOrWildcard(a, b string) bool {
	wild := func(s string) bool { return s == "" || s == "0.0.0.0" || s == "::" }
	return wild(a) || wild(b) || net.ParseIP(a).Equal(net.ParseIP(b))
}

func TestComposeBindMountsExist(t *testing.T) {
	p := loadProject(t)
	for name, s := range p.Services {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("service %s mounts %v", name, err)
			}
		}
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
