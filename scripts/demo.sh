#!/usr/bin/env bash
# The main job, on a fresh machine: install Chromium if needed, build the
# broker and native host, then run a scripted agent session in real Chromium
# through the real broker, native host and extension (see cmd/demo).
# Nothing is installed outside a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_command go "Go 1.26 (expected at /usr/local/go/bin/go)"
ensure_chromium
go build -o bin/ ./cmd/broker ./cmd/nativehost
go run ./cmd/demo --bin bin "$@"
