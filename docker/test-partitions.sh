#!/usr/bin/env bash
# Network-partition and ZooKeeper-ensemble fault scenarios on the compose cluster (issue 18):
# builds the images (docker/images.sh, cached), starts docker/compose.yaml under its own
# compose project with docker/partition/compose.faults.yaml over it (shorter ZooKeeper
# session and replica lag timeouts, no host port clashing with docker/test.sh's cluster),
# runs the scenarios (go test -tags dockertest ./docker/faults/) and removes everything it
# created: containers, networks, volumes.
#
#   docker/test-partitions.sh                  every scenario (about 3 minutes with cached images)
#   SAMSA_FAULTS_RUN=TestFlappingLink docker/test-partitions.sh    some (a go test -run pattern)
#   SAMSA_FAULTS_KEEP=1 ...                    leave the cluster running afterwards
#
# SAMSA_FAULTS_PROJECT names the compose project (samsa-faults); its host ports are free ones
# (docker/lib.sh's free_ports). Needs a docker daemon (started when none answers), compose
# (docker compose or Debian's docker-compose, installed when neither is there), nsenter and
# iptables on the host, and root: the faults (docker/partition/net.sh) enter the containers'
# network namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

. docker/lib.sh
project=${SAMSA_FAULTS_PROJECT:-samsa-faults}
started=$SECONDS
log() { dlog "test-partitions: $*"; }
die() { ddie "test-partitions: $*"; }

[ "$(id -u)" = 0 ] || die "run as root: the faults enter the containers' network namespaces"
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
for tool in nsenter iptables; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (Debian's util-linux, iptables)"
done
ensure_docker
ensure_compose
compose=("${COMPOSE[@]}")

docker/images.sh all

# The scenarios reach the containers by their addresses on the compose network; host ports
# are published only because compose.yaml publishes them: keep them off anything in use.
base=$(free_ports 9)
export SAMSA_IMAGE=samsa-test/samsa:local ZOOKEEPER_IMAGE=samsa-test/zookeeper:3.8
export SAMSA_PORT_1=$base SAMSA_PORT_2=$((base + 1)) SAMSA_PORT_3=$((base + 2))
export SAMSA_HTTP_PORT_1=$((base + 3)) SAMSA_HTTP_PORT_2=$((base + 4)) SAMSA_HTTP_PORT_3=$((base + 5))
export ZK_PORT_1=$((base + 6)) ZK_PORT_2=$((base + 7)) ZK_PORT_3=$((base + 8))
dc() { "${compose[@]}" -p "$project" -f docker/compose.yaml -f docker/partition/compose.faults.yaml "$@"; }

cleanup() {
	local rc=$?
	if [ "${SAMSA_FAULTS_KEEP:-}" = 1 ]; then
		log "leaving compose project $project running (remove it: ${compose[*]} -p $project -f docker/compose.yaml -f docker/partition/compose.faults.yaml down -v)"
	else
		dc logs --no-color >"${TMPDIR:-/tmp}/$project.log" 2>&1 || true
		dc down -v --remove-orphans >/dev/null 2>&1 || true
		log "removed compose project $project (its logs: ${TMPDIR:-/tmp}/$project.log)"
		stop_started_dockerd
	fi
	if [ "$rc" = 0 ]; then log "PASS in $((SECONDS - started))s"; else log "FAILED (exit $rc) after $((SECONDS - started))s"; fi
	exit "$rc"
}
trap cleanup EXIT

dc down -v --remove-orphans >/dev/null 2>&1 || true # a previous run's leftovers
log "starting compose project $project"
dc up -d >&2

# Healthy: the images' health checks (a ZooKeeper server in a quorum; a broker registered).
# shellcheck disable=SC2046 # one id per word
wait_healthy 180 $(compose_ids "$project")
log "cluster healthy; running the scenarios"

run=()
[ -n "${SAMSA_FAULTS_RUN:-}" ] && run=(-run "$SAMSA_FAULTS_RUN")
SAMSA_FAULTS_PROJECT=$project go test -tags dockertest -count=1 -v -timeout 30m "${run[@]}" ./docker/faults/
