// Package testserver names the PostgreSQL server the tests create their databases on. It is a
// package of its own so that bgcheck-dev can find that server without linking postgres/pgtest (and
// with it the testing package), and pgtest without importing devenv.
package testserver

import "os"

// DefaultURL is the PostgreSQL server the tests use when BGCHECK_TEST_DATABASE_URL is
// unset: its maintenance database, on which each test creates and drops databases of its own.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns the URL of the tests' PostgreSQL server (BGCHECK_TEST_DATABASE_URL).
func URL() string {
	if u := os.Getenv("BGCHECK_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}
