package deploy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/jackc/pgx/v5"

	"github.com/bgcheck/bgcheck/auth"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/mail"
	"github.com/bgcheck/bgcheck/workflows"
)

// Variables each role cannot do without. Every other variable config reads must reach the API or
// the worker too (TestComposePassesEveryConfigVariable), so that a .env file can set it.
var (
	apiNeeds = []string{
		"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "BGCHECK_HTTP_ADDR",
		"BGCHECK_REDIS_URL", "BGCHECK_SMTP_URL", "BGCHECK_JWT_SIGNING_KEY", "BGCHECK_PORTAL_URL",
		"BGCHECK_TRUSTED_PROXIES", "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS",
	}
	workerNeeds = []string{
		"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS",
		"BGCHECK_WORKER_CONCURRENCY", "BGCHECK_WORKER_METRICS_ADDR",
	}
	// agreed are the variables whose values the API and the worker must share (migrate shares
	// DATABASE_URL).
	agreed = []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS"}
)

// configVariables returns the environment variables package config reads: the string literals
// in its source that look like one.
func configVariables(t *testing.T) []string {
	t.Helper()
	isVar := regexp.MustCompile(`^(DATABASE_URL|TEMPORAL_[A-Z0-9_]+|BGCHECK_[A-Z0-9_]+)$`)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "config", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && isVar.MatchString(s) {
					seen[s] = true
				}
			}
			return true
		})
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	// A sanity check of the parsing itself.
	for _, n := range []string{"DATABASE_URL", "BGCHECK_JWT_SIGNING_KEY", "BGCHECK_REDIS_URL"} {
		if !seen[n] {
			t.Fatalf("found %v in package config, but not %s", names, n)
		}
	}
	return names
}

func TestComposePassesEveryConfigVariable(t *testing.T) {
	p := loadProject(t)
	api, worker := service(t, p, svcAPI), service(t, p, svcWorker)
	for _, name := range configVariables(t) {
		_, inAPI := api.Environment[name]
		_, inWorker := worker.Environment[name]
		if !inAPI && !inWorker {
			t.Errorf("package config reads %s, but docker-compose.yml passes it to neither api nor worker", name)
		}
	}
	for _, name := range apiNeeds {
		env(t, api, name)
	}
	for _, name := range workerNeeds {
		env(t, worker, name)
	}
	migrate := service(t, p, svcMigrate)
	for _, name := range agreed {
		if a, w := env(t, api, name), env(t, worker, name); a != w {
			t.Errorf("%s: api has %q, worker %q", name, a, w)
		}
	}
	if a, m := env(t, api, "DATABASE_URL"), env(t, migrate, "DATABASE_URL"); a != m {
		t.Errorf("DATABASE_URL: api has %q, migrate %q", a, m)
	}
}

// TestComposeEnvironmentIsValidConfig reads each bgcheck service's environment with package
// config, as the binary would, and checks that what it names is there.
func TestComposeEnvironmentIsValidConfig(t *testing.T) {
	p := loadProject(t)
	for _, name := range []string{svcAPI, svcWorker, svcMigrate} {
		t.Run(name, func(t *testing.T) {
			cfg := configFromService(t, service(t, p, name))
			process := map[string]config.Process{svcAPI: config.ProcessAPI, svcWorker: config.ProcessWorker, svcMigrate: config.ProcessCLI}[name]
			if err := cfg.CheckProduction(process); err != nil || !cfg.Production() {
				t.Errorf("production mode %v refuses compose's settings: %v", cfg.Production(), err)
			}
			checkDatabaseURL(t, p, cfg.DatabaseURL)
			if name == svcMigrate {
				return
			}
			checkDials(t, p, cfg.TemporalAddress, svcTemporal)
			if name == svcWorker {
				if cfg.WorkerMetricsAddr != "" {
					_, port, err := net.SplitHostPort(cfg.WorkerMetricsAddr)
					if err != nil {
						t.Fatalf("BGCHECK_WORKER_METRICS_ADDR %q: %v", cfg.WorkerMetricsAddr, err)
					}
					checkDials(t, p, net.JoinHostPort(svcWorker, port), svcWorker)
				}
				return
			}
			if _, err := auth.NewTokens([]byte(cfg.JWTSigningKey)); err != nil {
				t.Errorf("BGCHECK_JWT_SIGNING_KEY: %v", err)
			}
			if _, err := mail.NewSMTPSender(cfg.SMTPURL); err != nil {
				t.Errorf("BGCHECK_SMTP_URL %q: %v", cfg.SMTPURL, err)
			}
			checkURLDials(t, p, cfg.SMTPURL, svcMail)
			redis, err := url.Parse(cfg.RedisURL)
			if err != nil || redis.Scheme != "redis" {
				t.Errorf("BGCHECK_REDIS_URL %q is not a redis:// URL", cfg.RedisURL)
			}
			checkURLDials(t, p, cfg.RedisURL, svcRedis)
			// The proxy's upstream is the API's port, and the API's requests come through it.
			_, port, err := net.SplitHostPort(cfg.HTTPAddr)
			if err != nil {
				t.Fatalf("BGCHECK_HTTP_ADDR %q: %v", cfg.HTTPAddr, err)
			}
			checkDials(t, p, net.JoinHostPort(svcAPI, port), svcAPI)
			upstream, upstreamPort := caddyUpstream(t, p)
			if upstream != svcAPI || upstreamPort != port {
				t.Errorf("the proxy forwards to %s:%s, want %s:%s", upstream, upstreamPort, svcAPI, port)
			}
			if len(cfg.TrustedProxies) == 0 {
				t.Errorf("BGCHECK_TRUSTED_PROXIES is empty: behind the proxy every client would share one address's rate limits")
			}
		})
	}
}

// configFromService runs config.FromEnv with exactly the service's environment for the
// variables package config reads.
func configFromService(t *testing.T, s types.ServiceConfig) config.Config {
	t.Helper()
	for _, name := range configVariables(t) {
		v, ok := s.Environment[name]
		if ok && v != nil {
			t.Setenv(name, *v)
			continue
		}
		// Unset, not empty: for some variables empty means off. t.Setenv restores it afterwards.
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatalf("service %s: %v", s.Name, err)
	}
	return cfg
}

// checkDatabaseURL checks that the URL names the postgres service with its user, password and
// database.
func checkDatabaseURL(t *testing.T, p *types.Project, databaseURL string) {
	t.Helper()
	c, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		t.Fatalf("DATABASE_URL: %v", err)
	}
	checkDials(t, p, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), svcPostgres)
	pg := service(t, p, svcPostgres)
	if want := env(t, pg, "POSTGRES_USER"); c.User != want {
		t.Errorf("DATABASE_URL: user %q, but postgres creates %q", c.User, want)
	}
	if want := env(t, pg, "POSTGRES_PASSWORD"); c.Password != want {
		t.Errorf("DATABASE_URL: password %q, but postgres has %q", c.Password, want)
	}
	if want := env(t, pg, "POSTGRES_DB"); c.Database != want {
		t.Errorf("DATABASE_URL: database %q, but postgres creates %q", c.Database, want)
	}
}

func checkURLDials(t *testing.T, p *types.Project, rawURL, want string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Errorf("%q: %v", rawURL, err)
		return
	}
	checkDials(t, p, u.Host, want)
}

// checkDials checks that address (host:port) is service want, which exposes that port.
func checkDials(t *testing.T, p *types.Project, address, want string) {
	t.Helper()
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		t.Errorf("address %q: %v", address, err)
		return
	}
	if host != want {
		t.Errorf("address %q names %s, want service %s", address, host, want)
		return
	}
	s := service(t, p, host)
	exposed := slices.Clone([]string(s.Expose))
	for _, pc := range s.Ports {
		exposed = append(exposed, strconv.Itoa(int(pc.Target)))
	}
	if !slices.Contains(exposed, port) {
		t.Errorf("address %q: service %s exposes %v, not %s", address, host, exposed, port)
	}
}

// caddyUpstream returns the service and port the proxy's Caddyfile forwards to, after checking
// that the proxy mounts the file where Caddy reads it.
func caddyUpstream(t *testing.T, p *types.Project) (host, port string) {
	t.Helper()
	var source string
	for _, v := range service(t, p, svcProxy).Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == "/etc/caddy/Caddyfile" {
			source = v.Source
		}
	}
	if source == "" {
		t.Fatal("the proxy mounts no Caddyfile at /etc/caddy/Caddyfile")
	}
	b, err := os.ReadFile(source)
	if err != nil {
		t.Fatalf("the proxy's Caddyfile: %v", err)
	}
	m := regexp.MustCompile(`(?m)^\s*dynamic\s+a\s+(\S+)\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no `dynamic a NAME PORT` upstream", source)
	}
	return string(m[1]), string(m[2])
}

// Compose has no default for the keys: a published default would let anybody sign an admin's
// token or read the secrets at rest. Without them it refuses to start, naming the variable.
func TestComposeRefusesToStartWithoutTheKeys(t *testing.T) {
	for i, kv := range requiredSecrets {
		name, _, _ := strings.Cut(kv, "=")
		others := slices.Delete(slices.Clone(requiredSecrets), i, i+1)
		if _, err := tryLoadProject(others...); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v", name, err)
		}
		key := name + "=from-the-operator's-env-file-0123456789abcdef0123"
		if got := env(t, service(t, loadProject(t, key), svcAPI), name); got != strings.TrimPrefix(key, name+"=") {
			t.Errorf("with %s set, api gets %q", name, got)
		}
	}
}

func TestComposeRegistersExactlyTheSearchAttributes(t *testing.T) {
	p := loadProject(t)
	s := service(t, p, svcSearchAttributes)
	got := strings.Fields(env(t, s, "SEARCH_ATTRIBUTES"))
	want := slices.Clone(workflows.SearchAttributes)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s registers %v, want workflows.SearchAttributes %v", svcSearchAttributes, got, want)
	}
	api := service(t, p, svcAPI)
	for _, name := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"} {
		if a, b := env(t, api, name), env(t, s, name); a != b {
			t.Errorf("%s: api has %q, %s %q", name, a, svcSearchAttributes, b)
		}
	}
	script := strings.Join(slices.Concat(s.Entrypoint, s.Command), " ")
	for _, want := range []string{"search-attribute create", "$SEARCH_ATTRIBUTES", "--type Keyword"} {
		if !strings.Contains(script, want) {
			t.Errorf("%s's command does not contain %q:\n%s", svcSearchAttributes, want, script)
		}
	}
}
