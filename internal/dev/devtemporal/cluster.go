package devtemporal

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Postgres says where a Temporal cluster keeps its state: the server of the version the CLI
// embeds (`go.temporal.io/server/cmd/server`, pinned beside the CLI in internal/dev/temporalcli),
// on PostgreSQL, as a production deployment runs it, instead of the CLI's dev server.
type Postgres struct {
	// Address is the PostgreSQL server's host:port.
	Address string
	// User and Password sign in to it; User must be able to create databases.
	User, Password string
	// Database is the cluster's database; its visibility database is Database+"_visibility".
	// Start creates both, with their schema (temporal-sql-tool), when they are missing, and
	// brings an older schema up to date.
	Database string
}

// VisibilityDatabase is the database of the cluster's visibility records.
func (p *Postgres) VisibilityDatabase() string { return p.Database + "_visibility" }

// The cluster's tools, built from the tools module like the CLI.
const (
	serverPackage  = serverModule + "/cmd/server"
	sqlToolPackage = serverModule + "/cmd/tools/sql"
)

// ClusterBinaries returns the pinned temporal-server and temporal-sql-tool, building them into
// .data/bin (as Binary does the CLI) when they are missing: about three minutes on two cores the
// first time, less once the CLI's build has filled the module and build caches.
func ClusterBinaries(ctx context.Context, log *slog.Logger) (server, sqlTool string, err error) {
	if log == nil {
		log = slog.Default()
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", "", err
	}
	version, err := requiredVersion(filepath.Join(root, toolsDir, "go.mod"), serverModule)
	if err != nil {
		return "", "", err
	}
	build := func(name, pkg string) (string, error) {
		dest := filepath.Join(root, binDir, name+"-"+version)
		return dest, ensureBuilt(ctx, dest, log, func(ctx context.Context, out string) error {
			log.Info("building the pinned "+name+"; this takes a few minutes the first time", "version", version, "dest", dest)
			start := time.Now()
			if err := goBuild(ctx, filepath.Join(root, toolsDir), pkg, "", out); err != nil {
				return err
			}
			log.Info("built "+name, "dest", dest, "took", time.Since(start).Round(time.Second))
			return nil
		})
	}
	if server, err = build("temporal-server", serverPackage); err != nil {
		return "", "", err
	}
	sqlTool, err = build("temporal-sql-tool", sqlToolPackage)
	return server, sqlTool, err
}

// SetupSchema creates the cluster's two databases if they are missing and applies the server's
// embedded schema to them, up to the version the server needs. It can be run again: on an up to
// date database it changes nothing.
func SetupSchema(ctx context.Context, sqlTool string, pg *Postgres) error {
	host, port, err := net.SplitHostPort(pg.Address)
	if err != nil {
		return fmt.Errorf("devtemporal: PostgreSQL address %q: %w", pg.Address, err)
	}
	for _, db := range []struct{ name, schema string }{
		{pg.Database, "postgresql/v12/temporal"},
		{pg.VisibilityDatabase(), "postgresql/v12/visibility"},
	} {
		for _, args := range [][]string{
			{"create-database"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "--schema-name", db.schema},
		} {
			cmd := exec.CommandContext(ctx, sqlTool, append([]string{"--plugin", "postgres12", "--endpoint", host, "--port", port,
				"--user", pg.User, "--database", db.name}, args...)...)
			cmd.Env = append(os.Environ(), "SQL_PASSWORD="+pg.Password)
			out, err := cmd.CombinedOutput()
			if err != nil && !(args[0] == "create-database" && strings.Contains(string(out), "already exists")) {
				return fmt.Errorf("devtemporal: temporal-sql-tool %s on %s: %w\n%s", args[0], db.name, err, tail(out))
			}
		}
	}
	return nil
}

func tail(b []byte) string {
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// startCluster runs temporal-server on PostgreSQL (or SQLite) with every service in one process,
// its configuration written to a temporary directory removed when it stops.
func startCluster(ctx context.Context, opts Options, log *slog.Logger) (*Server, error) {
	switch {
	case opts.UIPort != 0:
		return nil, errors.New("devtemporal: temporal-server has no Web UI (the CLI's dev server has)")
	case opts.Postgres != nil && (opts.DBFile != "" || opts.SQLite):
		return nil, errors.New("devtemporal: a cluster on PostgreSQL has no SQLite database")
	}
	server, sqlTool, err := ClusterBinaries(ctx, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if opts.Postgres != nil {
		if err := SetupSchema(ctx, sqlTool, opts.Postgres); err != nil {
			return nil, err
		}
	}
	attempts := 1
	if opts.Port == 0 {
		attempts = portAttempts
	}
	for attempt := 1; ; attempt++ {
		s, err := spawnCluster(server, opts)
		if err != nil {
			return nil, err
		}
		err = s.waitReady(ctx, opts.SearchAttributes)
		if err == nil {
			return s, nil
		}
		portTaken := s.hasExited() && strings.Contains(s.LogTail(), "address already in use")
		s.Kill()
		if !portTaken || attempt == attempts || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("another process took a port the Temporal server was to use; trying others", "err", err)
	}
}

// clusterPorts are the ports of one single-process cluster: each service's gRPC and membership
// ports, and the frontend's HTTP API.
type clusterPorts struct {
	Frontend, FrontendHTTP, FrontendMembership int
	History, HistoryMembership                 int
	Matching, MatchingMembership               int
	Worker, WorkerMembership                   int
}

func spawnCluster(bin string, opts Options) (*Server, error) {
	ports := make([]int, 9)
	for i := range ports {
		var err error
		if i == 2 || i == 4 || i == 6 || i == 8 {
			ports[i], err = freeMembershipPort()
		} else {
			ports[i], err = freePort()
		}
		if err != nil {
			return nil, err
		}
	}
	if opts.Port != 0 {
		ports[0] = opts.Port
	}
	p := clusterPorts{ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6], ports[7], ports[8]}
	dir, err := os.MkdirTemp("", "temporal-cluster-*")
	if err != nil {
		return nil, fmt.Errorf("devtemporal: %w", err)
	}
	if err := writeClusterConfig(dir, p, opts); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{
		Address:    net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Frontend)),
		Port:       p.Frontend,
		exited:     make(chan struct{}),
		cluster:    true,
		removeDirs: []string{dir},
	}
	cmd := exec.Command(bin, "--root", dir, "--config", "config", "--env", "bgcheck", "--allow-no-auth", "start")
	if err := s.spawn(opts.LogFile, cmd); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// freeMembershipPort returns a free port below 32768: the cluster stores its members' ports
// in a smallint column, so Linux's ephemeral ports (32768 and up) are refused there.
func freeMembershipPort() (int, error) {
	for range 100 {
		var b [2]byte
		_, _ = rand.Read(b[:])
		port := 20000 + int(binary.BigEndian.Uint16(b[:]))%12000
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("devtemporal: no free port between 20000 and 32000")
}

// writeClusterConfig writes config/bgcheck.yaml and the dynamic config file under dir.
func writeClusterConfig(dir string, p clusterPorts, opts Options) error {
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	dynamic := filepath.Join(dir, "config", "dynamicconfig.yaml")
	// A namespace registered at start is served within a second, not after the default 10 s.
	values := map[string]string{"system.namespaceCacheRefreshInterval": `"1s"`}
	for k, v := range opts.DynamicConfig {
		values[k] = v
	}
	if err := os.WriteFile(dynamic, []byte(DynamicConfigYAML(values)), 0o644); err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "config", "bgcheck.yaml"))
	if err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	defer f.Close()
	err = clusterConfig.Execute(f, map[string]any{"P": p, "PG": opts.Postgres, "SQLite": sqliteStores(opts.DBFile), "DynamicConfig": dynamic})
	if err != nil {
		return fmt.Errorf("devtemporal: %w", err)
	}
	return f.Close()
}

// sqliteStore names temporal-server's two SQLite databases (by the store they hold: default,
// the history, and visibility) and how it opens them.
type sqliteStore struct {
	Databases  map[string]string
	Attributes map[string]string
}

// sqliteStores are the databases of temporal-server on SQLite: in memory (each its own, so each
// has a connection of its own), or in dbFile and dbFile+"-visibility"; their schema is set up on
// first use.
//
// In memory means SQLite's memdb VFS, whose pages the pager reads like a file's through a
// bounded page cache, not mode=memory, where the page cache is the database: at the end of
// every transaction SQLite walks that cache's hash table (pcache1TruncateUnsafe, 6% of the
// server's CPU after 12,000 deliveries), so the server slowed as it filled. A burst of 4,000
// after 14,000 deliveries: 241/s and 5.1 Temporal CPU-ms a delivery on memdb, against 213/s and
// 6.8 in mode=memory (make bench-delivery, -temporal server, 2026-11-25).
//
// Files are in WAL mode with synchronous=NORMAL (safe in WAL mode: a crash of the machine may
// lose the last transactions, never the database).
func sqliteStores(dbFile string) sqliteStore {
	if dbFile == "" {
		return sqliteStore{Databases: map[string]string{"default": "history", "visibility": "visibility"},
			Attributes: map[string]string{"vfs": "memdb", "setup": "true", "journal_mode": "memory", "synchronous": "0"}}
	}
	return sqliteStore{Databases: map[string]string{"default": dbFile, "visibility": dbFile + "-visibility"},
		Attributes: map[string]string{"cache": "private", "setup": "true", "journal_mode": "wal", "synchronous": "1"}}
}

// DynamicConfigYAML writes dynamic config (key → JSON value, as Options.DynamicConfig holds it)
// in the file format temporal-server reads, keys sorted: the cluster's file, and the one
// docker-compose.yml mounts into its Temporal (deploy/temporal-dynamicconfig.yaml, which a test
// holds to Tuned).
func DynamicConfigYAML(values map[string]string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", k, values[k]) // a JSON value is a YAML value
	}
	return b.String()
}

// clusterConfig is the server's static configuration: every service in one process on
// 127.0.0.1; on PostgreSQL four history shards (the count is fixed for a database's lifetime) and
// both stores there, or on SQLite (see sqliteStores) one shard and a database a store; no
// archival, and the logs at warn.
//
// On PostgreSQL the server talks through its pgx plugin (postgres12_pgx), as docker-compose.yml's
// Temporal does: pgx keeps each connection's statements prepared, where the lib/pq plugin
// (postgres12) has PostgreSQL parse and plan every query again. Bursts of 4,000 back to back:
// 176/s with PostgreSQL spending 3.3 CPU-ms a delivery for Temporal, against 148/s and 5.4
// (make bench-delivery -temporal postgres, 2026-11-25).
var clusterConfig = template.Must(template.New("config").Parse(`log:
  stdout: true
  level: warn
  format: console

persistence:
  defaultStore: default
  visibilityStore: visibility
{{- if not .PG}}
  numHistoryShards: 1
  datastores:{{range $store, $database := .SQLite.Databases}}
    {{$store}}:
      sql:
        pluginName: sqlite
        databaseName: "{{$database}}"
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes:{{range $k, $v := $.SQLite.Attributes}}
          {{$k}}: "{{$v}}"{{end}}
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: 1h{{end}}
{{- else}}
  numHistoryShards: 4
  datastores:
    default:
      sql:
        pluginName: postgres12_pgx
        databaseName: "{{.PG.Database}}"
        connectAddr: "{{.PG.Address}}"
        connectProtocol: tcp
        user: "{{.PG.User}}"
        password: "{{.PG.Password}}"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12_pgx
        databaseName: "{{.PG.VisibilityDatabase}}"
        connectAddr: "{{.PG.Address}}"
        connectProtocol: tcp
        user: "{{.PG.User}}"
        password: "{{.PG.Password}}"
        maxConns: 4
        maxIdleConns: 4
        maxConnLifetime: 1h
{{- end}}

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1

services:
  frontend:
    rpc:
      grpcPort: {{.P.Frontend}}
      membershipPort: {{.P.FrontendMembership}}
      bindOnLocalHost: true
      httpPort: {{.P.FrontendHTTP}}
  history:
    rpc:
      grpcPort: {{.P.History}}
      membershipPort: {{.P.HistoryMembership}}
      bindOnLocalHost: true
  matching:
    rpc:
      grpcPort: {{.P.Matching}}
      membershipPort: {{.P.MatchingMembership}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{.P.Worker}}
      membershipPort: {{.P.WorkerMembership}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:{{.P.Frontend}}

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: "{{.DynamicConfig}}"
  pollInterval: 10s
`))

// namespaceRetention is how long the cluster keeps a closed workflow's history.
const namespaceRetention = 3 * 24 * time.Hour

// registerNamespace creates Namespace on a cluster, which, unlike the dev server, starts with
// none. One that exists already is fine.
func registerNamespace(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: Namespace, WorkflowExecutionRetentionPeriod: durationpb.New(namespaceRetention)})
	if err != nil && !errors.As(err, new(*serviceerror.NamespaceAlreadyExists)) {
		return fmt.Errorf("registering namespace %s: %w", Namespace, err)
	}
	return nil
}

// PostgresOn names a fresh pair of databases, prefix and a random suffix, for a cluster on the
// PostgreSQL server whose (maintenance database) URL is serverURL, signing in as that URL's
// user. Start creates them; DropOn drops them once the cluster has stopped.
func PostgresOn(serverURL, prefix string) (*Postgres, error) {
	server, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: the PostgreSQL URL: %w", err)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	pg := &Postgres{Address: server.Host, User: server.User.Username(), Database: prefix + hex.EncodeToString(suffix[:])}
	pg.Password, _ = server.User.Password()
	return pg, nil
}

// DropOn drops the cluster's databases from the server at serverURL.
func (p *Postgres) DropOn(ctx context.Context, serverURL string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var errs []error
	for _, db := range []string{p.Database, p.VisibilityDatabase()} {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop %s: %w", db, err))
		}
	}
	return errors.Join(errs...)
}
