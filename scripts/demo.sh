#!/usr/bin/env bash
# The main job, on a fresh machine: build the broker and native host, then run
# a scripted session through the real socket and native host (see
# internal/demo). Nothing is installed outside a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
	echo "demo.sh: Go 1.26 is required (expected at /usr/local/go/bin/go)" >&2
	exit 1
fi
go build -o bin/ ./cmd/broker ./cmd/nativehost
go run ./internal/demo --bin bin
