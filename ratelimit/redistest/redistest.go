// Package redistest gives tests a real Redis and a key prefix of their own, so tests running at
// once never count against each other's buckets.
//
// The server is BGCHECK_TEST_REDIS_URL, by default the local Redis of the development machines
// (127.0.0.1:6379, database 0). When it does not answer, the test is skipped with a message that
// says so, except under CI (CI=true), where it fails: CI machines run Redis.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// DefaultURL is the server used when BGCHECK_TEST_REDIS_URL is unset.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns the test Redis's URL after checking that it answers.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("BGCHECK_TEST_REDIS_URL")
	if u == "" {
		u = DefaultURL
	}
	conn, err := dial(u)
	if err == nil {
		_, err = conn.Do("PING")
		conn.Close()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redistest: Redis at %s does not answer (CI runs it; set BGCHECK_TEST_REDIS_URL): %v", u, err)
		}
		t.Skipf("redistest: Redis at %s does not answer (start redis-server or set BGCHECK_TEST_REDIS_URL): %v", u, err)
	}
	return u
}

// Prefix returns a key prefix no other test uses; the keys under it are deleted when the test
// ends.
func Prefix(t testing.TB, url string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "bgcheck-test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		if err := deleteKeys(url, prefix); err != nil {
			t.Logf("redistest: delete keys %s*: %v", prefix, err)
		}
	})
	return prefix
}

// Keys returns the keys under prefix.
func Keys(t testing.TB, url, prefix string) []string {
	t.Helper()
	conn, err := dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	keys, err := scan(conn, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func deleteKeys(url, prefix string) error {
	conn, err := dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	keys, err := scan(conn, prefix)
	for _, k := range keys {
		if _, err := conn.Do("DEL", k); err != nil {
			return err
		}
	}
	return err
}

func scan(conn redis.Conn, prefix string) ([]string, error) {
	var out []string
	cursor := 0
	for {
		reply, err := redis.Values(conn.Do("SCAN", cursor, "MATCH", prefix+"*", "COUNT", 1000))
		if err != nil {
			return out, err
		}
		keys, _ := redis.Strings(reply[1], nil)
		out = append(out, keys...)
		if cursor, _ = redis.Int(reply[0], nil); cursor == 0 {
			return out, nil
		}
	}
}

func dial(url string) (redis.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return redis.DialURLContext(ctx, url, redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
}
