#!/usr/bin/env bash
# make demo: the demo target on :8081, an alert receiver on :9000 and two Vigil
# replicas on :8080 and :8082, sharing one embedded PostgreSQL under ./.vigil. Ctrl-C stops them all (the
# embedded PostgreSQL keeps running for the next start; `make db-stop` stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
# The demo's pages are readable without a login; sign in as admin (password
# below unless you set one) to add services or requeue jobs in the browser.
export VIGIL_PUBLIC_DASHBOARD=true
export VIGIL_ADMIN_PASSWORD="${VIGIL_ADMIN_PASSWORD:-vigil-demo}"
mkdir -p bin
go build -o bin/vigil ./cmd/server

pids=()
cleanup() {
	trap - INT TERM EXIT
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

bin/vigil demo-target -addr 127.0.0.1:8081 &
pids+=($!)
bin/vigil alerts receive -addr 127.0.0.1:9000 &
pids+=($!)
bin/vigil -addr :8080 -instance replica-8080 -config demo/vigil.yaml &
pids+=($!)
bin/vigil -addr :8082 -instance replica-8082 -config demo/vigil.yaml &
pids+=($!)
echo "demo: open http://localhost:8080 and http://localhost:8082 (admin login: admin / $VIGIL_ADMIN_PASSWORD; Ctrl-C to stop)"
# Wait for all of them: killing one replica (kill -9) leaves the others running,
# which is the point of the demo. Ctrl-C stops everything.
wait
