#!/usr/bin/env bash
# The main job, on a fresh machine: install Chromium if needed, build the
# broker and native host, then run a scripted agent session in real Chromium
# through the real broker, native host and extension (see internal/demo).
# Nothing is installed outside a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
	echo "demo.sh: Go 1.26 is required (expected at /usr/local/go/bin/go)" >&2
	exit 1
fi
if [ ! -x /usr/lib/chromium/chromium ]; then
	echo "== installing Debian chromium"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi
go build -o bin/ ./cmd/broker ./cmd/nativehost
go run ./internal/demo --bin bin "$@"
