#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what the tests
# need (Go modules, Debian's Chromium), then vets and tests all Go packages
# with the race detector and runs the extension's Node tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
	echo "test.sh: Go 1.26 is required (expected at /usr/local/go/bin/go)" >&2
	exit 1
fi
if ! command -v node >/dev/null; then
	echo "test.sh: Node.js 20 is required for the extension tests" >&2
	exit 1
fi

# The end-to-end suites drive real Chromium; on CI a missing browser fails them.
if [ ! -x /usr/lib/chromium/chromium ]; then
	echo "== installing Debian chromium"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi

echo "== Go modules"
go mod download

echo "== go vet"
go vet ./...

echo "== extension (node --test)"
node --test extension/test/*.test.mjs

echo "== go test"
go test -race -count=1 -timeout 30m ./...
