# Vigil's everyday commands. `make demo` and `make test` are the README's quick start.
GO ?= go

.PHONY: run demo test build vet fmt check db-stop clean

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
check:
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

# Stop the embedded PostgreSQL that `make run`/`make demo` started under ./.vigil.
db-stop:
	$(GO) run ./cmd/server db-stop

clean:
	rm -rf bin
