# Vigil's everyday commands. `make demo` and `make test` are the README's quick start.
GO ?= go

.PHONY: run demo test build vet fmt check generate generate-check chaos load db-stop clean

# One replica on :8080 with the embedded PostgreSQL (or DATABASE_URL) and ./vigil.yaml if present.
run:
	$(GO) run ./cmd/server

# The demo target and two replicas on :8080 and :8082 watching it.
demo:
	./scripts/demo.sh

# The whole suite against a real PostgreSQL: started by the test harness when
# TEST_DATABASE_URL is unset.
test:
	$(GO) test -race -count=1 -timeout 15m ./...

build:
	$(GO) build -o bin/vigil ./cmd/server

vet:
	$(GO) vet ./...

fmt:
	gofmt -w .

# What CI checks besides the tests.
check: generate-check
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

# templ's generated *_templ.go files are committed; they must match the .templ sources.
generate:
	$(GO) tool templ generate

generate-check:
	$(GO) tool templ generate
	@git diff --exit-code -- templates || (echo "templates changed: run 'make generate' and commit the *_templ.go files"; exit 1)
	@test -z "$$(git status --porcelain -- templates)" || (echo "untracked generated files:"; git status --porcelain -- templates; exit 1)

# Reliability: three replicas, a fresh PostgreSQL, faults at random from SEED
# (0: a new seed, printed), then an audit; docs/reliability.md.
DURATION ?= 2m
SEED ?= 0
SERVICES ?= 100
chaos:
	$(GO) run ./scripts/chaos -duration $(DURATION) -seed $(SEED) -services $(SERVICES)

# Performance: a fresh durable PostgreSQL, the demo target, SERVICES at 30 s and
# REPLICAS replicas for DURATION, then a table from the database and /proc;
# docs/performance.md.
REPLICAS ?= 2
load:
	$(GO) run ./scripts/load -services $(SERVICES) -replicas $(REPLICAS) -duration $(DURATION)

# Stop the embedded PostgreSQL that `make run`/`make demo` started under ./.vigil.
db-stop:
	$(GO) run ./cmd/server db-stop

clean:
	rm -rf bin
