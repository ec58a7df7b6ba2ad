#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what the tests
# need, then vets and tests all packages with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
	echo "test.sh: Go 1.26 is required (expected at /usr/local/go/bin/go)" >&2
	exit 1
fi

echo "== Go modules"
go mod download

echo "== go vet"
go vet ./...

echo "== go test"
go test -race -count=1 -timeout 20m ./...
