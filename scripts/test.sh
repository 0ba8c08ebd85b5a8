#!/usr/bin/env bash
# Runs the whole test suite: go vet, then go test on every package. Installs what the tests
# need when missing (Debian packages zookeeper, kcat, chromium and openssl; as root or through
# sudo).
# Tests start their own ZooKeeper and brokers on free ports; nothing needs to be running.
#
#   scripts/test.sh                      # everything
#   scripts/test.sh -run TestX ./integration/   # arguments replace ./... (go test flags, packages)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_go
ensure_packages zookeeper kcat chromium openssl

t0=$SECONDS
log "go vet ./..."
go vet ./...
# The module must build off Linux too (zero-copy and the tests' process handling have
# fallbacks there); vet and build it for macOS and FreeBSD without running anything.
log "GOOS=darwin go vet ./... && GOOS=darwin go build ./... && GOOS=freebsd go build ./..."
GOOS=darwin go vet ./...
GOOS=darwin go build ./...
GOOS=freebsd go build ./...
if [ $# -eq 0 ]; then
	set -- ./...
fi
log "go test -count=1 -timeout 40m $*"
status=0
go test -count=1 -timeout 40m "$@" 2>&1 </dev/null || status=$?
log "tests finished in $((SECONDS - t0))s (exit $status)"
exit $status
