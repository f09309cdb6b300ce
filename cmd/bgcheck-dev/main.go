// Command bgcheck-dev runs bgcheck locally in the foreground, on a machine with nothing but Go and
// the PostgreSQL server binaries (`make dev`); as `bgcheck-dev test-postgres`, gives the test
// suite a PostgreSQL (`make test`); and, as `bgcheck-dev temporal-bin`, builds the pinned Temporal
// CLI ahead of the tests (`make temporal`).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/bgcheck/bgcheck/apiserver"
	"github.com/bgcheck/bgcheck/config"
	"github.com/bgcheck/bgcheck/internal/dev/devenv"
	"github.com/bgcheck/bgcheck/internal/dev/devtemporal"
	"github.com/bgcheck/bgcheck/internal/dev/testserver"
	"github.com/bgcheck/bgcheck/postgres"
	"github.com/bgcheck/bgcheck/secretbox"
	"github.com/bgcheck/bgcheck/webhook/listener"
	"github.com/bgcheck/bgcheck/worker"
	"github.com/bgcheck/bgcheck/workflows"
)

const usage = `usage:
  bgcheck-dev                 run the API on BGCHECK_HTTP_ADDR (default :8080) with a demo account,
                              using DATABASE_URL, else PostgreSQL at 127.0.0.1:5432, else a cluster
                              it starts in ./.data/postgres; the Temporal dev server (Web UI on
                              :8233, state in ./.data/temporal.db) unless TEMPORAL_ADDRESS answers;
                              and a worker. Ctrl-C stops them all
  bgcheck-dev test-postgres [-- COMMAND ARGS...]
                              find PostgreSQL at BGCHECK_TEST_DATABASE_URL (default ` + testserver.DefaultURL + `)
                              or start a throwaway one; run COMMAND with BGCHECK_TEST_DATABASE_URL
                              set and stop the server after it, or without COMMAND print the URL
                              and keep the server until interrupted
  bgcheck-dev temporal-bin    print the path of the Temporal CLI pinned in internal/dev/temporalcli, building
                              it into ./.data/bin first if need be (minutes, the first time), or
                              $` + devtemporal.BinaryEnv + ` when set; builds the server and SQL tool of the
                              version it embeds (the cluster on PostgreSQL) there too
`

// dataDir holds what local development keeps between runs; .gitignore lists it.
const dataDir = ".data"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args := os.Args[1:]; {
	case len(args) == 0:
		err = runDev(ctx)
	case args[0] == "test-postgres":
		err = runTestPostgres(ctx, args[1:])
	case args[0] == "temporal-bin":
		err = runTemporalBin(ctx)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "bgcheck-dev: unknown command %q\n%s", args[0], usage)
		os.Exit(2)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) { // the command run by test-postgres failed and has said why
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bgcheck-dev:", err)
		os.Exit(1)
	}
}

// runDev serves the API with a local database and the demo account until ctx ends.
func runDev(ctx context.Context) error {
	if os.Getenv("BGCHECK_ENV") == "" {
		// A developer's machine: a local database without TLS, sign-in links in the log.
		os.Setenv("BGCHECK_ENV", "development")
	}
	if os.Getenv("BGCHECK_SANDBOX_SPEED") == "" {
		// A check's screenings take days of the sandbox provider's time: a day a second here.
		os.Setenv("BGCHECK_SANDBOX_SPEED", "86400")
	}
	if os.Getenv("BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS") == "" {
		// Local receivers (http://127.0.0.1:…) are what one tries webhooks with.
		os.Setenv("BGCHECK_ALLOW_PRIVATE_WEBHOOK_URLS", "true")
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := config.NewLogger(cfg)

	pg, err := devenv.FindOrStartPostgres(ctx, filepath.Join(dataDir, "postgres"), log)
	if err != nil {
		return err
	}
	defer func() {
		if stopPostgres(pg, log) && pg.Started {
			log.Info("stopped PostgreSQL")
		}
	}()
	cfg.DatabaseURL, err = devenv.EnsureDatabase(ctx, pg.URL, databaseName(os.Getenv("DATABASE_URL")))
	if err != nil {
		return err
	}
	// The local receiver: every delivery to the demo's test endpoint is printed here, verified.
	recvLn, err := net.Listen("tcp", cmp.Or(os.Getenv("BGCHECK_DEV_RECEIVER_ADDR"), "127.0.0.1:9000"))
	if err != nil {
		return fmt.Errorf("the local webhook receiver (BGCHECK_DEV_RECEIVER_ADDR): %w", err)
	}
	receiverURL := "http://" + recvLn.Addr().String() + "/webhooks"
	demo, created, err := prepareDatabase(ctx, cfg, receiverURL)
	if err != nil {
		recvLn.Close()
		return err
	}
	recv := &http.Server{
		Handler:           listener.New(demo.ReceiverSecret, "/webhooks", nil, prefixWriter{"receiver: ", os.Stdout}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = recv.Serve(recvLn) }()
	defer recv.Close()
	temporal, uiURL, err := startTemporal(ctx, cfg, pg.URL, log)
	if err != nil {
		return err
	}
	if temporal != nil {
		defer temporal.Stop()
		cfg.TemporalAddress = temporal.Address
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	printBanner(os.Stdout, banner{
		BaseURL: baseURL(cfg.HTTPAddr, ln.Addr()), DatabaseURL: cfg.DatabaseURL, StartedPostgres: pg.Started,
		Demo: demo, DemoCreated: created, DemoFile: filepath.Join(dataDir, "demo.json"),
		TemporalAddress: cfg.TemporalAddress, TemporalUI: uiURL, RetrySchedule: cfg.RetrySchedule,
		ReceiverURL: receiverURL,
	})
	workerDone := make(chan error, 1)
	go func() { workerDone <- worker.Run(ctx, cfg, log.With("component", "worker")) }()
	err = apiserver.Serve(ctx, ln, cfg, log)
	if werr := <-workerDone; err == nil {
		err = werr
	}
	return err
}

// startTemporal uses the Temporal at TEMPORAL_ADDRESS when one answers there; otherwise it starts
// the pinned dev server with its Web UI on :8233 and the search attributes registered, keeping its
// state in ./.data/temporal.db so deliveries survive a restart of make dev. With
// BGCHECK_DEV_TEMPORAL=postgres (make dev TEMPORAL=postgres) it starts a Temporal cluster on the
// PostgreSQL at pgURL instead, in the databases bgcheck_temporal and bgcheck_temporal_visibility,
// as production runs it (no Web UI); with server, temporal-server on SQLite files in ./.data, its
// visibility in a database of its own (faster than the dev server; no Web UI). It returns the
// server it started (nil when it found one) and the UI's address.
func startTemporal(ctx context.Context, cfg config.Config, pgURL string, log *slog.Logger) (*devtemporal.Server, string, error) {
	if os.Getenv("TEMPORAL_ADDRESS") != "" {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if c, err := client.DialContext(dctx, client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace}); err == nil {
			c.Close()
			log.Info("using the Temporal that answers", "address", cfg.TemporalAddress)
			return nil, "", nil
		}
	}
	opts := devtemporal.Options{
		Port: 7233, UIPort: 8233,
		DBFile:           filepath.Join(dataDir, "temporal.db"),
		LogFile:          filepath.Join(dataDir, "temporal.log"),
		SearchAttributes: workflows.SearchAttributes,
		DynamicConfig:    devtemporal.Tuned(),
		Logger:           log,
	}
	what := "the Temporal dev server (the first run builds the pinned CLI, which takes a few minutes)"
	switch store := cmp.Or(os.Getenv("BGCHECK_DEV_TEMPORAL"), "dev"); store {
	case "dev":
	case "server":
		opts.UIPort, opts.SQLite = 0, true
		opts.DBFile = filepath.Join(dataDir, "temporal-server.db")
		what = "temporal-server on SQLite in ./.data (the first run builds the pinned server, which takes a few minutes)"
	case "postgres":
		u, err := url.Parse(pgURL)
		if err != nil {
			return nil, "", err
		}
		opts.UIPort, opts.DBFile = 0, ""
		opts.Postgres = &devtemporal.Postgres{Address: u.Host, User: u.User.Username(), Database: "bgcheck_temporal"}
		opts.Postgres.Password, _ = u.User.Password()
		what = "a Temporal cluster on PostgreSQL (the first run builds the pinned server, which takes a few minutes)"
	default:
		return nil, "", fmt.Errorf("BGCHECK_DEV_TEMPORAL is %q: dev (the CLI's dev server), server (temporal-server on SQLite) or postgres (a cluster on PostgreSQL)", store)
	}
	log.Info("starting " + what)
	srv, err := devtemporal.Start(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("start Temporal: %w", err)
	}
	return srv, srv.UIAddress, nil
}

// prepareDatabase migrates the database and returns the demo account, creating it on first use,
// with its test-mode endpoint for the local receiver at receiverURL.
func prepareDatabase(ctx context.Context, cfg config.Config, receiverURL string) (devenv.Demo, bool, error) {
	secrets, err := secretbox.Parse(cfg.SecretsKeys())
	if err != nil {
		return devenv.Demo{}, false, fmt.Errorf("BGCHECK_SECRETS_KEY: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithSecrets(secrets))
	if err != nil {
		return devenv.Demo{}, false, err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return devenv.Demo{}, false, err
	}
	path := filepath.Join(dataDir, "demo.json")
	demo, created, err := devenv.EnsureDemo(ctx, db, path)
	if err != nil {
		return devenv.Demo{}, false, err
	}
	return demo, created, devenv.EnsureReceiverEndpoint(ctx, db, path, &demo, receiverURL)
}

// prefixWriter starts every write (one line from the receiver) with a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// runTestPostgres gives the tests a server: the one at BGCHECK_TEST_DATABASE_URL if it answers,
// else a throwaway cluster in a temporary directory that is removed afterwards.
func runTestPostgres(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	tmp, err := os.MkdirTemp("", "bgcheck-test-postgres-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	pg, err := devenv.FindOrStart(ctx, []string{testserver.URL()},
		devenv.StartOptions{DataDir: tmp, Ephemeral: true}, log)
	if err != nil {
		return err
	}
	defer stopPostgres(pg, log)

	if len(args) == 0 {
		fmt.Printf("BGCHECK_TEST_DATABASE_URL=%s\n", pg.URL)
		<-ctx.Done()
		return nil
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // stdin stays /dev/null: a background group may not read the terminal
	cmd.Env = append(os.Environ(), "BGCHECK_TEST_DATABASE_URL="+pg.URL)
	// Its own process group, so that an interrupt reaches the command and its children (go test
	// and the test binaries) through us, and we stop the server only after they have gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case err = <-waited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			err = <-waited
		}
	}
	return err
}

// runTemporalBin prints the pinned temporal CLI's path, alone on stdout so that scripts can
// capture it; what building it says goes to stderr.
func runTemporalBin(ctx context.Context) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	bin, err := devtemporal.Binary(ctx, log)
	if err != nil {
		return err
	}
	// The cluster's server and SQL tool too (make dev TEMPORAL=postgres, the end-to-end tests'
	// second run): built in the same visible step, not inside a test's timeout.
	if _, _, err := devtemporal.ClusterBinaries(ctx, log); err != nil {
		return err
	}
	fmt.Println(bin)
	return nil
}

// stopPostgres stops the server if we started it, and reports whether all went well. It is
// silent on success, so that go test's summary stays the last thing test-postgres prints.
func stopPostgres(pg *devenv.Postgres, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg.Stop(ctx); err != nil {
		log.Error("stopping PostgreSQL", "err", err)
		return false
	}
	return true
}

// databaseName is the database DATABASE_URL names, or bgcheck as API.md §9's default does.
func databaseName(databaseURL string) string {
	if u, err := url.Parse(databaseURL); err == nil {
		if name := strings.TrimPrefix(u.Path, "/"); name != "" {
			return name
		}
	}
	return "bgcheck"
}

// baseURL is the address to show for curl: the listener's port on localhost, or on the host
// BGCHECK_HTTP_ADDR names when it names one.
func baseURL(httpAddr string, addr net.Addr) string {
	host, _, _ := net.SplitHostPort(httpAddr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	_, port, _ := net.SplitHostPort(addr.String())
	return "http://" + net.JoinHostPort(host, port)
}
