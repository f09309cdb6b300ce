package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/bgcheck/bgcheck/test/bench/internal/benchkit"

	"github.com/jackc/pgx/v5"
)

// backendPIDs returns the server processes of the connections to dbName (the API's pool), whose
// CPU is part of what a request costs; nil when they cannot be listed.
func backendPIDs(ctx context.Context, serverURL, dbName string) []int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, dbName)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil
	}
	return pids
}

// buildBinaries builds the real commands into dir, by import path so any working directory inside
// the module will do.
func buildBinaries(ctx context.Context, dir string) error {
	return benchkit.BuildService(ctx, dir, "bgcheck-api", "bgcheckctl")
}

// bootstrap creates the account with bgcheckctl and returns its test key.
func bootstrap(ctx context.Context, ctl, dbURL string) (string, error) {
	cmd := exec.CommandContext(ctx, ctl, "bootstrap", "--account", "Load test",
		"--admin-email", "load@example.com", "--admin-password", "load-test-password")
	cmd.Env = append(os.Environ(), "BGCHECK_ENV=development", "DATABASE_URL="+dbURL, "BGCHECK_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("bgcheckctl bootstrap: %w", err)
	}
	var res struct {
		TestKey string `json:"test_key"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.TestKey == "" {
		return "", fmt.Errorf("bgcheckctl bootstrap: no test_key in %q", out)
	}
	return res.TestKey, nil
}

// seedEndpoints creates n endpoints through the API so the list has realistic content, and
// returns the list's first page exactly as the API answers it (the bare server's body).
func seedEndpoints(ctx context.Context, listURL, key string, n int) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for i := 1; i <= n; i++ {
		body, _ := json.Marshal(map[string]string{
			"url":         fmt.Sprintf("https://example.com/hook/%d", i),
			"description": fmt.Sprintf("load test endpoint %d", i),
		})
		status, resp, err := call(ctx, client, http.MethodPost, listURL, key, body)
		if err != nil {
			return nil, fmt.Errorf("create endpoint: %w", err)
		}
		if status != http.StatusCreated {
			return nil, fmt.Errorf("create endpoint: status %d: %s", status, resp)
		}
	}
	status, page, err := call(ctx, client, http.MethodGet, listURL, key, nil)
	if err != nil {
		return nil, fmt.Errorf("list endpoints: %w", err)
	}
	var parsed struct {
		Data []json.RawMessage `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal(page, &parsed) != nil || len(parsed.Data) != min(n, 20) {
		return nil, fmt.Errorf("list endpoints: want %d items, got status %d: %.300s", min(n, 20), status, page)
	}
	return page, nil
}

func call(ctx context.Context, client *http.Client, method, u, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-API-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// child is a server process this program started and must stop.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited; err is then set
	err  error
}

func startChild(name, path string, args, env []string, out io.Writer) (*child, error) {
	cmd := exec.Command(path, args...)
	// A benchmark runs on one machine without TLS to PostgreSQL or mail: development mode.
	cmd.Env = append(append(os.Environ(), "BGCHECK_ENV=development"), env...)
	cmd.Stdout, cmd.Stderr = out, out
	benchkit.SetDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// waitReady polls u until it answers 200, the process exits, or 30 seconds pass.
func (c *child) waitReady(ctx context.Context, u string, header http.Header) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		req.Header = header
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within 30s", c.name, u)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return fmt.Errorf("%s exited before it was ready: %v", c.name, c.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks the process to shut down gracefully and kills it if it has not within 25 seconds
// (the API allows itself 20).
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(25 * time.Second):
		logf("%s did not stop within 25s; killing it", c.name)
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
