# Entry points for a fresh machine with Go and the PostgreSQL server binaries; no Docker needed.
#   make dev       run the API locally (PostgreSQL found or started, demo account, keys printed);
#                  make dev TEMPORAL=postgres runs a Temporal cluster on that PostgreSQL instead of
#                  the dev server, TEMPORAL=server temporal-server on SQLite files (faster, no UI)
#   make test      go vet, gofmt check, and every test with the race detector (test/run.sh)
#   make temporal  build the Temporal CLI pinned in internal/dev/temporalcli into ./.data/bin (the dev server
#                  of the end-to-end tests), and the server and SQL tool of the version it embeds (the
#                  cluster on PostgreSQL): minutes the first time, then instant; make test does it
#   make build     the binaries, into ./bin

GO ?= go

.PHONY: dev test temporal build clean

TEMPORAL ?= dev

dev:
	BGCHECK_DEV_TEMPORAL="$(TEMPORAL)" $(GO) run ./cmd/bgcheck-dev

test:
	GO="$(GO)" bash test/run.sh

temporal:
	$(GO) run ./cmd/bgcheck-dev temporal-bin

build:
	mkdir -p bin
	$(GO) build -o bin/ ./cmd/...

# Removes the binaries. The local database in ./.data is kept; delete it by hand to start over.
clean:
	rm -rf bin

# Benchmarks (figures in the README). bench-api builds the binaries, starts bgcheck-api and a bare
# chi server as separate processes and loads both; BENCH_FLAGS passes flags such as -c 64 -d 20s.
# bench-limit checks that the platform rate limit holds under 200 clients for one window (a
# minute); BENCH_FLAGS='-instances 2 -redis redis://127.0.0.1:6379/0' checks it across instances.
.PHONY: bench bench-api bench-delivery bench-limit
bench:
	$(GO) test ./api -run '^$$' -bench APIKeyRouting -benchmem -count 5

bench-api:
	cd tools/bench && $(GO) run ./loadapi $(BENCH_FLAGS)

bench-limit:
	cd tools/bench && $(GO) run ./loadapi -limit-check -c 200 $(BENCH_FLAGS)

# Delivery benchmark: Temporal dev server, PostgreSQL, the API, a worker and a receiver on this
# machine; ingest, latency at 50 events/s and rising rates, sustained deliveries (README).
bench-delivery:
	cd tools/bench && $(GO) run ./delivery $(BENCH_FLAGS)
