#!/usr/bin/env bash
# The compose cluster's smoke test, on images built here (no registry is reachable, so nothing
# is pulled; docker/images.sh builds and caches them). Run as root from anywhere:
#
#   docker/test.sh
#
# It installs Debian's docker.io and docker-compose when missing, starts a docker daemon when
# none answers, builds the images, then on docker/compose.yaml under its own compose project
# and free host ports:
#   1. up from nothing: three ZooKeeper servers (one ensemble) and three brokers become healthy;
#   2. kcat and a Go client (samsa's console tools, franz-go), each from the host and from a
#      client container on the compose network, produce with acks=all to an RF-3 topic
#      (min.insync.replicas=2) and read everything back: every record exactly once;
#   3. the controller's container is killed: another broker becomes controller and every
#      partition is led by a live broker; producing with acks=all still works;
#   4. stop (the brokers exit 0: a clean shutdown), down && up with the volumes kept: every
#      record is still there at its offset;
#   5. a bad environment (missing, contradictory variables) stops a broker container with a
#      clear message in `docker logs`.
# Then it removes every container, network and volume it created (the cached images stay;
# SAMSA_KEEP=1 keeps the cluster running for a look). A second run takes about 2 minutes.
# SAMSA_FROM_DOCKERFILE=1 runs it all on docker/Dockerfile's image instead (built with local
# stand-ins for its upstream base images; a few minutes more).
set -euo pipefail
cd "$(dirname "$0")/.."
. docker/lib.sh

start=$SECONDS
stage_start=$SECONDS
stage() {
	dlog "--- $* (previous stage: $((SECONDS - stage_start))s)"
	stage_start=$SECONDS
}
fail() {
	dlog "FAIL: $*"
	exit 1
}

[ "$(id -u)" = 0 ] || ddie "run as root: it may install packages, start dockerd and debootstrap an image"
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || ddie "Go is not installed"
ensure_docker
ensure_compose
for tool in kcat curl; do
	command -v $tool >/dev/null 2>&1 ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $tool >&2 || ddie "apt-get install $tool failed"
done

work=$(mktemp -d)
project=samsa-smoke-$$
# note_anonymous_volumes: records the unnamed volumes of the project's containers (an image's
# VOLUME that compose.yaml mounts nothing on, e.g. the official ZooKeeper image's /logs):
# `down` without -v leaves them behind, so cleanup removes them by name.
note_anonymous_volumes() {
	local id
	for id in $(docker ps -aq --filter "label=com.docker.compose.project=$project"); do
		docker inspect -f '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}}{{"\n"}}{{end}}{{end}}' "$id"
	done | grep -E '^[0-9a-f]{64}$' >>"$work/anonymous-volumes" || true
}
cleanup() {
	local rc=$?
	set +e
	if [ "${SAMSA_KEEP:-0}" = 1 ]; then
		dlog "SAMSA_KEEP=1: project $project left running; remove it with: ${COMPOSE[*]} -f docker/compose.yaml -p $project down -v"
	else
		note_anonymous_volumes
		"${COMPOSE[@]}" -f docker/compose.yaml -p "$project" down -v --remove-orphans >/dev/null 2>&1
		docker ps -aq --filter "label=samsa-smoke=$project" | xargs -r docker rm -fv >/dev/null 2>&1
		sort -u "$work/anonymous-volumes" | xargs -r docker volume rm >/dev/null 2>&1
	fi
	rm -rf "$work"
	stop_started_dockerd
	if [ "$rc" = 0 ]; then dlog "docker/test.sh: PASS in $((SECONDS - start))s"; else dlog "docker/test.sh: FAILED (exit $rc) after $((SECONDS - start))s"; fi
}
trap cleanup EXIT

# A run that was killed (SIGKILL, a lost terminal) could not clean up: remove the projects of
# runs whose process is gone.
for p in $(docker ps -a --format '{{.Label "com.docker.compose.project"}}' | grep -E '^samsa-smoke-[0-9]+$' | sort -u); do
	kill -0 "${p#samsa-smoke-}" 2>/dev/null && continue
	dlog "removing $p, left by a run that is gone"
	"${COMPOSE[@]}" -f docker/compose.yaml -p "$p" down -v --remove-orphans >/dev/null 2>&1 || true
	docker ps -aq --filter "label=samsa-smoke=$p" | xargs -r docker rm -fv >/dev/null 2>&1 || true
done

stage "building samsa and the images"
CGO_ENABLED=0 go build -trimpath -o "$work/samsa" ./cmd/samsa
SAMSA_BINARY=$work/samsa docker/images.sh all
samsa=$work/samsa
samsa_image="samsa-test/samsa:local"
if [ "${SAMSA_FROM_DOCKERFILE:-0}" = 1 ]; then
	docker/images.sh dockerfile
	samsa_image="samsa-test/samsa:dockerfile"
fi

export SAMSA_IMAGE=$samsa_image ZOOKEEPER_IMAGE=samsa-test/zookeeper:3.8
use_ports() {
	base=$(free_ports 9)
	export SAMSA_PORT_1=$base SAMSA_PORT_2=$((base + 1)) SAMSA_PORT_3=$((base + 2))
	export SAMSA_HTTP_PORT_1=$((base + 3)) SAMSA_HTTP_PORT_2=$((base + 4)) SAMSA_HTTP_PORT_3=$((base + 5))
	export ZK_PORT_1=$((base + 6)) ZK_PORT_2=$((base + 7)) ZK_PORT_3=$((base + 8))
	host_bootstrap=localhost:$SAMSA_PORT_1,localhost:$SAMSA_PORT_2,localhost:$SAMSA_PORT_3
}
box_bootstrap=broker1:29092,broker2:29092,broker3:29092
compose() { "${COMPOSE[@]}" -f docker/compose.yaml -p "$project" "$@"; }

stage "1. compose up from nothing (project $project, ${COMPOSE[*]})"
# A host port taken between free_ports and `up` (another test's listener): again on others.
for ((try = 1; ; try++)); do
	use_ports
	compose up -d >"$work/up.log" 2>&1 && break
	if [ "$try" -lt 3 ] && grep -q 'address already in use' "$work/up.log"; then
		dlog "a host port from $base was taken meanwhile: again on other ports"
		compose down -v >/dev/null 2>&1 || true
		continue
	fi
	cat "$work/up.log" >&2
	fail "compose up"
done
dlog "host ports from $base"
services="zoo1 zoo2 zoo3 broker1 broker2 broker3"
# all_ids: sets ids to the six containers' ids.
all_ids() {
	local s
	ids=()
	for s in $services; do ids+=("$(container_of "$project" "$s")"); done
}
all_ids
wait_healthy 180 "${ids[@]}"
network=$(docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}' "$(container_of "$project" broker1)")
dlog "all six containers healthy; compose network $network"
for i in 1 2 3; do
	port=$(eval echo "\$SAMSA_HTTP_PORT_$i")
	metrics=$(curl -fsS --max-time 5 "http://localhost:$port/metrics") || metrics=
	grep -q '^kafka_controller_kafkacontroller_activecontrollercount' <<<"$metrics" ||
		fail "broker$i's samsa.http.listener does not serve /metrics on host port $port"
done
dlog "every broker serves /metrics on its host HTTP port"
# One ensemble, not three standalone servers: a leader and two followers.
modes=
for i in 1 2 3; do
	port=$(eval echo "\$ZK_PORT_$i")
	# shellcheck disable=SC2016 # $1 is the inner shell's
	modes="$modes $(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; echo srvr >&3; sed -n "s/^Mode: //p" <&3' _ "$port")"
done
[ "$(tr ' ' '\n' <<<"$modes" | grep -v '^$' | sort | tr '\n' ' ')" = "follower follower leader " ] ||
	fail "ZooKeeper modes:$modes; want one leader and two followers"
dlog "ZooKeeper ensemble:$modes"
for i in 1 2 3; do
	uid=$(ps -o uid= -p "$(docker inspect -f '{{.State.Pid}}' "$(container_of "$project" "broker$i")")" | tr -d ' ')
	[ "$uid" = 65532 ] || fail "broker$i runs as uid $uid, want 65532 (non-root)"
done

# in_box IMAGE ARGS...: runs a client container on the compose network (stdin passed on).
in_box() {
	local image=$1
	shift
	docker run --rm -i --network "$network" --label "samsa-smoke=$project" "$image" "$@"
}
# kcat_read BOOTSTRAP: every record of topic smoke as "partition offset value", sorted.
kcat_read() {
	kcat -b "$1" -C -t smoke -o beginning -e -q -f '%p %o %s\n' | sort -n -k1,1 -k2,2
}
# check_records FILE N PREFIX...: FILE (partition offset value lines) holds exactly one record
# for each PREFIX-1..PREFIX-N and nothing else, and each partition's offsets run from 0 with
# no gap.
check_records() {
	local file=$1 n=$2 p i
	shift 2
	: >"$work/want"
	for p in "$@"; do
		for ((i = 1; i <= n; i++)); do echo "$p-$i"; done >>"$work/want"
	done
	sort "$work/want" -o "$work/want"
	awk '{print $3}' "$file" | sort >"$work/got"
	if ! cmp -s "$work/want" "$work/got"; then
		dlog "missing records: $(comm -23 "$work/want" "$work/got" | head -5 | tr '\n' ' ')"
		dlog "unexpected or duplicated records: $(comm -13 "$work/want" <(sort "$work/got") | head -5 | tr '\n' ' ') $(uniq -d "$work/got" | head -5 | tr '\n' ' ')"
		fail "records read back differ from those acknowledged ($(wc -l <"$work/got") read, $(wc -l <"$work/want") produced)"
	fi
	awk 'BEGIN { bad = 0 } { if ($2 != next_off[$1] + 0) { bad = 1; print "partition " $1 ": offset " $2 ", expected " next_off[$1] + 0 }; next_off[$1] = $2 + 1 } END { exit bad }' "$file" >&2 ||
		fail "offsets are not contiguous"
}
# leaders_ok BOOTSTRAP DEAD_ID: every partition of every topic is led by a live broker (not
# -1, not DEAD_ID) and the metadata lists at least one partition.
leaders_ok() {
	local out
	out=$("$samsa" topics --bootstrap-server "$1" --describe 2>/dev/null) || return 1
	grep -q 'Leader:' <<<"$out" || return 1
	! grep -Eq "Leader: (-1|none|$2)([^0-9]|\$)" <<<"$out"
}
controller_id() {
	kcat -b "$1" -L -m 5 2>/dev/null | sed -n 's/^ *broker \([0-9]*\) at .*(controller).*/\1/p'
}

stage "2. produce with acks=all to an RF-3 topic from the host and from a client container, kcat and Go"
"$samsa" topics --bootstrap-server "$host_bootstrap" --create --topic smoke --partitions 3 \
	--replication-factor 3 --config min.insync.replicas=2 >/dev/null || fail "create topic smoke"
n=200
seq -f 'host-kcat-%g' 1 $n | kcat -b "$host_bootstrap" -P -t smoke -X acks=all -X enable.idempotence=true ||
	fail "kcat on the host could not produce"
seq -f 'host-go-%g' 1 $n | "$samsa" console-producer --bootstrap-server "$host_bootstrap" --topic smoke \
	--request-required-acks all --producer-property enable.idempotence=true >"$work/host-go.out" 2>&1 ||
	fail "samsa console-producer on the host: $(cat "$work/host-go.out")"
seq -f 'box-kcat-%g' 1 $n | in_box samsa-test/kcat:local kcat -b "$box_bootstrap" -P -t smoke \
	-X acks=all -X enable.idempotence=true || fail "kcat in a container could not produce"
seq -f 'box-go-%g' 1 $n | in_box "$samsa_image" console-producer --bootstrap-server "$box_bootstrap" \
	--topic smoke --request-required-acks all --producer-property enable.idempotence=true >"$work/box-go.out" 2>&1 ||
	fail "samsa console-producer in a container: $(cat "$work/box-go.out")"
kcat_read "$host_bootstrap" >"$work/records-host-kcat"
check_records "$work/records-host-kcat" $n host-kcat host-go box-kcat box-go
in_box samsa-test/kcat:local kcat -b "$box_bootstrap" -C -t smoke -o beginning -e -q -f '%p %o %s\n' |
	sort -n -k1,1 -k2,2 >"$work/records-box-kcat"
cmp -s "$work/records-host-kcat" "$work/records-box-kcat" || fail "kcat in a container reads other records than kcat on the host"
for where in host box; do
	if [ $where = host ]; then
		"$samsa" console-consumer --bootstrap-server "$host_bootstrap" --topic smoke --from-beginning \
			--max-messages $((4 * n)) --timeout-ms 20000 --property print.partition=true --property print.offset=true
	else
		in_box "$samsa_image" console-consumer --bootstrap-server "$box_bootstrap" --topic smoke --from-beginning \
			--max-messages $((4 * n)) --timeout-ms 20000 --property print.partition=true --property print.offset=true
	fi 2>"$work/consumer.err" | sed -n 's/^Partition:\([0-9]*\)[[:space:]]*Offset:\([0-9]*\)[[:space:]]*/\1 \2 /p' |
		sort -n -k1,1 -k2,2 >"$work/records-$where-go"
	cmp -s "$work/records-host-kcat" "$work/records-$where-go" || {
		head -3 "$work/records-$where-go" "$work/consumer.err" >&2
		fail "samsa console-consumer ($where) reads other records than kcat ($(wc -l <"$work/records-$where-go") lines)"
	}
done
dlog "$((4 * n)) records produced (acks=all, idempotent) and read back exactly once by kcat and the Go client, on the host and in a container"

stage "3. kill the controller's container"
old=$(controller_id "$host_bootstrap")
[ -n "$old" ] || fail "no controller in the metadata"
docker kill "$(container_of "$project" "broker$old")" >/dev/null
live=()
for i in 1 2 3; do [ "$i" = "$old" ] || live+=("localhost:$(eval echo "\$SAMSA_PORT_$i")"); done
live_bootstrap=$(
	IFS=,
	echo "${live[*]}"
)
dlog "killed broker$old (the controller); waiting for a new controller and leaders (the dead broker's ZooKeeper session expires first: zookeeper.session.timeout.ms, 18 s)"
t0=$SECONDS
for ((i = 0; ; i++)); do
	new=$(controller_id "$live_bootstrap")
	if [ -n "$new" ] && [ "$new" != "$old" ] && leaders_ok "$live_bootstrap" "$old"; then
		break
	fi
	[ "$i" -lt 240 ] || fail "after 120s: controller '${new:-none}', leaders: $("$samsa" topics --bootstrap-server "$live_bootstrap" --describe 2>&1 | grep Leader)"
	sleep 0.5
done
dlog "broker$new is the controller after $((SECONDS - t0))s; every partition is led by a live broker"
seq -f 'after-kill-%g' 1 $n | kcat -b "$live_bootstrap" -P -t smoke -X acks=all -X enable.idempotence=true ||
	fail "kcat could not produce with acks=all on two brokers"
kcat_read "$live_bootstrap" >"$work/records-after-kill"
check_records "$work/records-after-kill" $n host-kcat host-go box-kcat box-go after-kill
dlog "acks=all produce on the two live brokers works; all $((5 * n)) records there"
docker start "$(container_of "$project" "broker$old")" >/dev/null
all_ids
wait_healthy 120 "${ids[@]}"

stage "4. compose down && up, volumes kept"
note_anonymous_volumes
# stop first, to see the brokers' exit codes: a clean (controlled) shutdown exits 0, one that
# outlived stop_grace_period was SIGKILLed (137).
compose stop >"$work/down.log" 2>&1 || {
	cat "$work/down.log" >&2
	fail "compose stop"
}
for i in 1 2 3; do
	code=$(docker inspect -f '{{.State.ExitCode}}' "$(container_of "$project" "broker$i")")
	[ "$code" = 0 ] || fail "broker$i exited $code on compose stop, want 0 (a clean shutdown)"
done
dlog "the brokers shut down cleanly (exit 0)"
compose down >"$work/down.log" 2>&1 || {
	cat "$work/down.log" >&2
	fail "compose down"
}
compose up -d >"$work/up2.log" 2>&1 || {
	cat "$work/up2.log" >&2
	fail "compose up after down"
}
all_ids
wait_healthy 180 "${ids[@]}"
for ((i = 0; ; i++)); do
	leaders_ok "$host_bootstrap" none && break
	[ "$i" -lt 120 ] || fail "partitions without a leader after the restart"
	sleep 0.5
done
kcat_read "$host_bootstrap" >"$work/records-after-restart"
cmp -s "$work/records-after-kill" "$work/records-after-restart" || {
	diff "$work/records-after-kill" "$work/records-after-restart" | head >&2
	fail "records differ after down && up"
}
dlog "all $((5 * n)) records intact at their offsets after down && up"

stage "5. a bad environment stops a broker container with a clear message"
# bad_env WANT ENV...: a broker container with ENV must exit 1, its log containing WANT.
bad_env() {
	local want=$1 id code
	shift
	local args=()
	for e in "$@"; do args+=(-e "$e"); done
	id=$(docker run -d --label "samsa-smoke=$project" "${args[@]}" "$samsa_image")
	code=$(docker wait "$id")
	docker logs "$id" >"$work/bad.log" 2>&1
	docker rm -v "$id" >/dev/null
	[ "$code" = 1 ] || fail "bad environment ($*): exit $code, want 1; log: $(cat "$work/bad.log")"
	grep -qF "$want" "$work/bad.log" || fail "bad environment ($*): log lacks \"$want\": $(cat "$work/bad.log")"
	dlog "  $*: exit 1, docker logs: $(grep -F "$want" "$work/bad.log" | head -n 1 | sed 's/^ *//')"
}
bad_env "KAFKA_ZOOKEEPER_CONNECT is not set" KAFKA_BROKER_ID=1
bad_env "KAFKA_BROKER_ID is not set" KAFKA_ZOOKEEPER_CONNECT=zoo1:2181
bad_env "both set num.partitions, to different values" KAFKA_BROKER_ID=1 KAFKA_ZOOKEEPER_CONNECT=zoo1:2181 \
	KAFKA_NUM_PARTITIONS=3 KAFKA_CFG_NUM_PARTITIONS=6
bad_env "cannot use the nonroutable meta-address 0.0.0.0" KAFKA_BROKER_ID=1 KAFKA_ZOOKEEPER_CONNECT=zoo1:2181 \
	KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://0.0.0.0:9092
bad_env "KAFKA_ADVERTISED_LISTENERS is not set" KAFKA_BROKER_ID=1 KAFKA_ZOOKEEPER_CONNECT=zoo1:2181 \
	KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092
bad_env "KAFKA_ADVERTISED_LISTENERS is set but empty" KAFKA_BROKER_ID=1 KAFKA_ZOOKEEPER_CONNECT=zoo1:2181 KAFKA_ADVERTISED_LISTENERS=

stage "done"
