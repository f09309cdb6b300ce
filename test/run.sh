#!/usr/bin/env bash
# The whole suite, as `make test` and CI run it: go vet, a gofmt check, then every test with the
# race detector. Tests that need PostgreSQL use BGCHECK_TEST_DATABASE_URL (default: the server at
# 127.0.0.1:5432). `bgcheck-dev test-postgres` runs go test with that variable set: to the server
# there if it answers, else to a throwaway cluster it starts from the installed initdb/pg_ctl and
# stops once go test has finished, even when interrupted. End-to-end tests run the Temporal dev
# server of the CLI pinned in internal/dev/temporalcli: it is built (minutes, the first time; kept in
# ./.data/bin) before go test starts, so that the build is seen and not charged to a test's timeout,
# and BGCHECK_TEMPORAL_BIN names it for the tests. Set BGCHECK_TEMPORAL_BIN to use another CLI.
#
# The end-to-end tests then run a second time against a Temporal cluster on PostgreSQL
# (BGCHECK_TEST_TEMPORAL=postgres).
#
# TEST_TIMEOUT (default 20m) bounds go test; extra arguments go to go test (e.g. -run TestX).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
TEST_TIMEOUT=${TEST_TIMEOUT:-20m}

echo "==> go vet ./..."
"$GO" vet ./...
# The benchmarks are a module of their own (tools/bench): vetted and built here, run by make bench-*.
echo "==> go vet ./... (tools/bench)"
(cd tools/bench && "$GO" vet ./...)

echo "==> gofmt -l"
# Hidden directories are skipped, as go vet and go test skip them: ./.data may hold a PostgreSQL
# cluster owned by another user.
unformatted=$(find . -name '.?*' -prune -o -name '*.go' -print0 | xargs -0 -r gofmt -l)
if [[ -n $unformatted ]]; then
	echo "These files are not gofmt-formatted (run gofmt -w on them):" >&2
	echo "$unformatted" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GO" build -o "$tmp/bgcheck-dev" ./cmd/bgcheck-dev

echo "==> Temporal CLI"
BGCHECK_TEMPORAL_BIN=$("$tmp/bgcheck-dev" temporal-bin)
export BGCHECK_TEMPORAL_BIN
echo "$BGCHECK_TEMPORAL_BIN"

echo "==> go test -race -count=1 -timeout $TEST_TIMEOUT ./..."
"$tmp/bgcheck-dev" test-postgres -- "$GO" test -race -count=1 -timeout "$TEST_TIMEOUT" "$@" ./...

# The end-to-end tests once more, against a Temporal cluster on PostgreSQL (temporal-server of the
# version the CLI embeds, built above by temporal-bin) instead of the dev server: as production
# runs it. Skipped when go test was given arguments (a focused run).
if (($# == 0)); then
	echo "==> go test -count=1 ./test/e2e (Temporal cluster on PostgreSQL)"
	BGCHECK_TEST_TEMPORAL=postgres "$tmp/bgcheck-dev" test-postgres -- "$GO" test -count=1 -timeout "$TEST_TIMEOUT" ./test/e2e
fi
