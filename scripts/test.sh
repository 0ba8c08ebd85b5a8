#!/usr/bin/env bash
# Runs the whole test suite. Installs what the tests need (ZooKeeper, kcat) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
go vet ./...
go test -count=1 -timeout 30m ./... 2>&1
