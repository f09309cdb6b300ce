// Package benchkit holds what the benchmark programs share: a throwaway database, the machine's
// CPU counters, and tying child processes' lives to the benchmark's.
package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CreateDatabase creates an empty database named prefix and a random suffix on the server and
// returns its URL, its name and a function that drops it; the binaries apply the migrations.
func CreateDatabase(ctx context.Context, serverURL, prefix string) (dbURL, dbName string, drop func() error, err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("BGCHECK_TEST_DATABASE_URL: %w", err)
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("cannot reach PostgreSQL at %s (set BGCHECK_TEST_DATABASE_URL): %w", u.Redacted(), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var b [6]byte
	_, _ = rand.Read(b[:])
	dbName = prefix + hex.EncodeToString(b[:])
	name := pgx.Identifier{dbName}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", nil, fmt.Errorf("create database: %w", err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	}
	u.Path = "/" + dbName
	return u.String(), dbName, drop, nil
}

// HostCPU reads the machine's busy and total ticks from the first line of /proc/stat.
func HostCPU() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	var idle uint64
	for i, v := range f[1:] {
		if i >= 8 { // guest time is already counted in user
			break
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return total - idle, total, true
}

// BuildService builds the service's commands into dir. It builds in the service's own module
// (where this module's replace directive points), whose go.sum covers every dependency of the
// commands: this module's go.sum covers only what the benchmarks import.
func BuildService(ctx context.Context, dir string, commands ...string) error {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/bgcheck/bgcheck").Output()
	if err != nil {
		return fmt.Errorf("finding the service module: %w", err)
	}
	args := []string{"build", "-o", dir}
	for _, c := range commands {
		args = append(args, "github.com/bgcheck/bgcheck/cmd/"+c)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = strings.TrimSpace(string(out))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}
