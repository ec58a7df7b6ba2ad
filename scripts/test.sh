#!/usr/bin/env bash
# Runs every test of the project on a fresh machine: installs what the tests
# need (Go modules, Debian's Chromium, the npm packages of the
# real-application suite), then vets and tests all Go packages
# with the race detector and runs the extension's Node tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_command go "Go 1.26 (expected at /usr/local/go/bin/go)"
need_command node "Node.js 20, for the extension and MCP tests"
# The end-to-end suites drive real Chromium; on CI a missing browser fails
# them. The shared-terminal tests run full-screen programs (less, vi) in
# real PTYs.
ensure_packages chromium:/usr/lib/chromium/chromium less:/usr/bin/less vim-tiny:/usr/bin/vi

echo "== Go modules"
go mod download

# The real-application suite serves web applications from the npm registry
# at pinned versions.
ensure_npm_dependencies test/realapps

echo "== go vet"
go vet ./...

echo "== extension (node --test)"
node --test extension/test/*.test.mjs

echo "== go test"
# The real applications run after the rest, alone and without the race
# detector: they time a person's drags and hovers against frameworks'
# animations, which a machine busy with two race-instrumented suites at
# once delays past anything a person's machine sees.
go test -race -count=1 -timeout 30m $(go list ./... | grep -v '/test/realapps$')
echo "== real applications"
go test -count=1 -timeout 15m ./test/realapps
