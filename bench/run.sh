#!/usr/bin/env bash
# Runs the samsa vs kfake benchmark (bench/main.go): builds samsa and bench/kfakeserver,
# starts a ZooKeeper (Debian's zookeeper package) and, per round, a fresh samsa broker, a
# fresh kfake process and a 3-broker samsa cluster; prints the table. Flags pass through:
#   bench/run.sh -rounds 3 -out bench/RESULTS.table.md -strace
# See `go run ./bench -h` for sizes (-small-records, -large-records, -e2e-duration, -only).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f /usr/share/java/zookeeper.jar ]; then
	echo "bench: installing ZooKeeper (apt-get install -y zookeeper)" >&2
	apt-get install -y --no-install-recommends zookeeper >/dev/null
fi
if [[ " $* " == *" -strace "* ]] && ! command -v strace >/dev/null; then
	apt-get install -y strace >/dev/null
fi
exec go run ./bench "$@"
