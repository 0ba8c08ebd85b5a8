#!/usr/bin/env bash
# Starts a local samsa cluster in the foreground: a standalone ZooKeeper (Debian's
# `zookeeper` package, installed when missing, run as a plain process) and three brokers.
# Ctrl-C (or SIGTERM) stops the brokers cleanly, then ZooKeeper.
#
# Everything lives under ./.cluster/ (kept across runs, like a real cluster's disks; remove
# it to start from nothing). Environment:
#   SAMSA_ZK_PORT    ZooKeeper client port (2181)
#   SAMSA_BASE_PORT  first broker port; broker N listens on BASE_PORT+N-1 (9092)
#   SAMSA_HTTP_BASE_PORT  broker N's samsa.http.listener (/metrics) is on HTTP_BASE_PORT+N-1
#                    (9404, the Prometheus JMX exporter's usual port); 0 turns it off
#   SAMSA_BROKERS    number of brokers (3)
#   SAMSA_HOST       address the brokers listen on and advertise (127.0.0.1)
#   SAMSA_CLUSTER_DIR  where the cluster's files live instead of ./.cluster
#
# While it runs, another terminal takes brokers down and brings them back (the study guide's
# experiments do, docs/study/); each broker's pid is in .cluster/broker-N/broker.pid:
#   scripts/cluster.sh kill-broker N   SIGKILL, a crash: its ZooKeeper session (and so its
#                                      /brokers/ids/N znode) lives on until it expires
#   scripts/cluster.sh stop-broker N   SIGTERM, a controlled shutdown; waits until it exited
#                                      and the others' metadata has it in no ISR
#   scripts/cluster.sh start-broker N  starts it again; waits until it is registered and no
#                                      partition is under-replicated (no N: every broker that
#                                      is down)
#   scripts/cluster.sh controller      prints the active controller's broker id (from the
#                                      /controller znode; waits while an election runs)
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."
root=$PWD
. scripts/lib.sh

zk_port=${SAMSA_ZK_PORT:-2181}
base_port=${SAMSA_BASE_PORT:-9092}
http_base_port=${SAMSA_HTTP_BASE_PORT:-9404}
brokers=${SAMSA_BROKERS:-3}
host=${SAMSA_HOST:-127.0.0.1}
dir=${SAMSA_CLUSTER_DIR:-$root/.cluster}
case $dir in /*) ;; *) dir=$caller/$dir ;; esac
# show PATH: PATH relative to the repository when it is inside it, for log lines.
show() { printf '%s' "${1#"$root"/}"; }

# broker_pid ID: prints the pid of broker ID's running process, or fails when it is not running.
broker_pid() {
	local f=$dir/broker-$1/broker.pid pid args
	[ -r "$f" ] || return 1
	pid=$(<"$f")
	kill -0 "$pid" 2>/dev/null || return 1
	# A pid file outlives its process and pids are reused (and an exited child stays a zombie
	# for a moment): check that the process is this broker.
	if [ -r "/proc/$pid/cmdline" ]; then
		args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
	else
		args=$(ps -p "$pid" -o args= 2>/dev/null) || return 1
	fi
	case $args in *"$dir/broker-$1/server.yaml"*) printf '%s\n' "$pid" ;; *) return 1 ;; esac
}

# cluster_live_pids: the running brokers' pids; stop_all (scripts/lib.sh) stops these, so it
# also stops a broker that start-broker started from another terminal.
cluster_live_pids() {
	local id
	for ((id = 1; id <= brokers; id++)); do
		broker_pid "$id" || true
	done
}

# broker_launch ID: starts broker ID from its server.yaml in the background, in its own
# session (a Ctrl-C meant for the script does not reach it), and writes its pid file.
broker_launch() {
	local bdir=$dir/broker-$1
	setsid ./bin/samsa broker --config "$bdir/server.yaml" </dev/null >>"$bdir/broker.log" 2>&1 &
	LAUNCHED_PID=$!
	echo "$LAUNCHED_PID" >"$bdir/broker.pid"
}

# yaml_port KEY FILE: the port at the end of KEY's value in a generated server.yaml.
yaml_port() {
	sed -n "s/^$1: .*:\([0-9][0-9]*\)\$/\1/p" "$2" | head -n 1
}

STARTED_PID=()
OLD_OWNER=()

# znode_owner ZK_PORT ID: the session that holds /brokers/ids/ID (empty: none), from the
# ZooKeeper's `dump` (sessions, each followed by its ephemeral znodes).
znode_owner() {
	zk_4lw "$1" dump | awk -v p="/brokers/ids/$2" '/^0x/ { s = $1 } $1 == p { print s }'
}

# start_broker ID: launches broker ID from its server.yaml (the cluster was started before).
start_broker() {
	[ -x ./bin/samsa ] || die "no ./bin/samsa: start the cluster first (scripts/cluster.sh builds it)"
	OLD_OWNER[$1]=$(znode_owner "$(yaml_port zookeeper.connect "$dir/broker-$1/server.yaml")" "$1")
	broker_launch "$1"
	STARTED_PID[$1]=$LAUNCHED_PID
}

# wait_registered ID: waits until broker ID (started by start_broker) listens and holds its
# /brokers/ids znode in a new session. A crashed broker's old session holds that znode until
# it expires (zookeeper.session.timeout.ms, 18 s): the new process waits for that.
wait_registered() {
	local id=$1 pid=${STARTED_PID[$1]} old=${OLD_OWNER[$1]} bdir=$dir/broker-$1 zport bport i owner
	zport=$(yaml_port zookeeper.connect "$bdir/server.yaml")
	bport=$(yaml_port listeners "$bdir/server.yaml")
	for ((i = 0; ; i++)); do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 30 "$bdir/broker.log" >&2
			die "broker $id exited during start-up (log: $(show "$bdir")/broker.log)"
		}
		if port_busy "$bport"; then
			owner=$(znode_owner "$zport" "$id")
			[ -n "$owner" ] && [ "$owner" != "$old" ] && break
		fi
		[ "$i" -ge 600 ] && die "broker $id did not register within 60s (log: $(show "$bdir")/broker.log)"
		sleep 0.1
	done
	log "broker $id registered (pid $pid)"
}

# wait_in_sync ID WHAT: waits until no partition is under-replicated, asking a live broker
# other than ID (the new one's metadata may still be empty, which would list no partition).
wait_in_sync() {
	local id=$1 what=$2 b other='' out i
	for ((b = 1; b <= brokers; b++)); do
		[ "$b" = "$id" ] && continue
		if broker_pid "$b" >/dev/null && [ -r "$dir/broker-$b/server.yaml" ]; then
			other=$host:$(yaml_port listeners "$dir/broker-$b/server.yaml")
			break
		fi
	done
	[ -n "$other" ] || other=$host:$(yaml_port listeners "$dir/broker-$id/server.yaml")
	for ((i = 0; ; i++)); do
		if out=$(./bin/samsa topics --bootstrap-server "$other" --describe --under-replicated-partitions 2>&1) &&
			[ -z "$out" ]; then
			break
		fi
		[ "$i" -ge 120 ] && die "partitions still under-replicated after 60s: $out"
		sleep 0.5
	done
	log "$what up; no partition is under-replicated"
}

# wait_out_of_isrs ID: after a controlled shutdown, waits until the other brokers' metadata
# (UpdateMetadata from the controller, asynchronous) shows ID in no ISR of a partition that
# has a leader (the last replica of an ISR stays in it, with no leader).
wait_out_of_isrs() {
	local id=$1 b other='' i
	for ((b = 1; b <= brokers; b++)); do
		if [ "$b" != "$id" ] && broker_pid "$b" >/dev/null; then
			other=$host:$(yaml_port listeners "$dir/broker-$b/server.yaml")
			break
		fi
	done
	[ -n "$other" ] || return 0
	for ((i = 0; i < 100; i++)); do
		./bin/samsa topics --bootstrap-server "$other" --describe 2>/dev/null | awk -v id="$id" '
			/Isr:/ {
				leader = ""; isr = ""
				for (f = 1; f < NF; f++) {
					if ($f == "Leader:") leader = $(f + 1)
					if ($f == "Isr:") isr = $(f + 1)
				}
				if (leader != "none" && leader != "-1") {
					n = split(isr, r, ",")
					for (j = 1; j <= n; j++) if (r[j] == id) found = 1
				}
			}
			END { exit found ? 0 : 1 }' || return 0
		sleep 0.1
	done
	log "broker $id still in an ISR after 10s (the controller may be busy)"
}

# broker_command kill-broker|stop-broker|start-broker ID: the commands a second terminal runs.
broker_command() {
	local cmd=$1 id=${2:-} pid i
	if [ "$cmd" = start-broker ] && [ -z "$id" ]; then
		# Start them all, then wait once: one alone cannot bring the ISRs back.
		local b started=()
		for ((b = 1; b <= brokers; b++)); do
			if [ -r "$dir/broker-$b/server.yaml" ] && ! broker_pid "$b" >/dev/null; then
				start_broker "$b"
				started+=("$b")
			fi
		done
		if [ ${#started[@]} -eq 0 ]; then
			log "every broker is running"
			return 0
		fi
		for b in "${started[@]}"; do
			wait_registered "$b"
		done
		if [ ${#started[@]} -eq 1 ]; then
			wait_in_sync "${started[0]}" "broker ${started[0]} is"
		else
			wait_in_sync "${started[0]}" "brokers ${started[*]} are"
		fi
		return 0
	fi
	case $id in '' | *[!0-9]*) die "usage: scripts/cluster.sh $cmd BROKER_ID" ;; esac
	local bdir=$dir/broker-$id
	[ -r "$bdir/server.yaml" ] || die "no broker $id in $(show "$dir") (start the cluster first: scripts/cluster.sh)"
	case $cmd in
	kill-broker | stop-broker)
		pid=$(broker_pid "$id") || die "broker $id is not running"
		if [ "$cmd" = kill-broker ]; then
			kill -KILL "$pid" 2>/dev/null || true
		else
			kill -TERM "$pid" 2>/dev/null || true
		fi
		# Not our child: poll until it is gone (a controlled shutdown takes a few seconds).
		for ((i = 0; ; i++)); do
			broker_pid "$id" >/dev/null || break
			if [ "$i" -ge 600 ]; then
				log "broker $id did not stop within 60s: killing it"
				kill -KILL "$pid" 2>/dev/null || true
			fi
			sleep 0.1
		done
		if [ "$cmd" = kill-broker ]; then
			log "broker $id killed (SIGKILL)"
		else
			wait_out_of_isrs "$id"
			log "broker $id stopped (SIGTERM, controlled shutdown)"
		fi
		;;
	start-broker)
		broker_pid "$id" >/dev/null && die "broker $id is already running"
		start_broker "$id"
		wait_registered "$id"
		wait_in_sync "$id" "broker $id is"
		;;
	esac
}

# print_controller: the broker id in /controller, polling while there is none (an election).
print_controller() {
	local zport i id
	[ -r "$dir/broker-1/server.yaml" ] || die "no cluster in $(show "$dir") (start it first: scripts/cluster.sh)"
	zport=$(yaml_port zookeeper.connect "$dir/broker-1/server.yaml")
	for ((i = 0; i < 300; i++)); do
		id=$(./bin/samsa zookeeper-shell "127.0.0.1:$zport" get /controller 2>/dev/null |
			sed -n 's/.*"brokerid":\([0-9][0-9]*\).*/\1/p')
		if [ -n "$id" ]; then
			echo "$id"
			return 0
		fi
		sleep 0.1
	done
	die "no controller in /controller after 30s"
}

case ${1:-} in
'') ;;
kill-broker | stop-broker | start-broker)
	broker_command "$@"
	exit 0
	;;
controller)
	print_controller
	exit 0
	;;
*) die "usage: scripts/cluster.sh [kill-broker N | stop-broker N | start-broker [N] | controller]" ;;
esac

ensure_go
ensure_packages zookeeper

port_busy "$zk_port" && die "port $zk_port is in use (another ZooKeeper?): set SAMSA_ZK_PORT"
for ((id = 1; id <= brokers; id++)); do
	p=$((base_port + id - 1))
	port_busy "$p" && die "port $p is in use (another broker?): set SAMSA_BASE_PORT"
	if [ "$http_base_port" != 0 ]; then
		hp=$((http_base_port + id - 1))
		port_busy "$hp" && die "port $hp is in use: set SAMSA_HTTP_BASE_PORT (0 turns the HTTP listeners off)"
	fi
done

log "building ./bin/samsa"
go build -o ./bin/samsa ./cmd/samsa

# ZK_PID, broker_pids and stop_all (scripts/lib.sh): Ctrl-C stops brokers, then ZooKeeper.
cluster_traps

mkdir -p "$dir/zookeeper"
log "starting ZooKeeper on 127.0.0.1:$zk_port (log: $(show "$dir")/zookeeper/zookeeper.log)"
zk_start "$dir/zookeeper" "$zk_port"
echo "$ZK_PID" >"$dir/zookeeper/zookeeper.pid"

bootstrap=
metrics=
for ((id = 1; id <= brokers; id++)); do
	p=$((base_port + id - 1))
	bdir=$dir/broker-$id
	mkdir -p "$bdir/data"
	http_line=
	if [ "$http_base_port" != 0 ]; then
		hp=$((http_base_port + id - 1))
		http_line="samsa.http.listener: $host:$hp"
		metrics+=${metrics:+ }http://$host:$hp/metrics
	fi
	cat >"$bdir/server.yaml" <<EOF
# generated by scripts/cluster.sh
broker.id: $id
listeners: PLAINTEXT://$host:$p
log.dirs: $bdir/data
zookeeper.connect: 127.0.0.1:$zk_port
samsa.state.change.log.file: $bdir/state-change.log
$http_line
EOF
	broker_launch "$id"
	broker_pids+=("$LAUNCHED_PID")
	bootstrap+=${bootstrap:+,}$host:$p
	log "broker $id: $host:$p${http_line:+, metrics http://$host:$hp/metrics} (config $(show "$bdir")/server.yaml, log $(show "$bdir")/broker.log)"
done

# Ready when every broker accepts connections and holds its /brokers/ids/<id> znode.
for ((i = 0; ; i++)); do
	for ((id = 1; id <= brokers; id++)); do
		kill -0 "${broker_pids[id - 1]}" 2>/dev/null || {
			tail -n 30 "$dir/broker-$id/broker.log" >&2
			die "broker $id exited during start-up (log: $(show "$dir")/broker-$id/broker.log)"
		}
	done
	ready=1
	dump=$(zk_4lw "$zk_port" dump)
	for ((id = 1; id <= brokers; id++)); do
		port_busy $((base_port + id - 1)) && grep -q "/brokers/ids/$id\$" <<<"$dump" || ready=
	done
	[ -n "$ready" ] && break
	[ "$i" -ge 600 ] && die "brokers did not register within 60s (logs: $(show "$dir")/broker-*/broker.log)"
	sleep 0.1
done
log "cluster up: bootstrap servers $bootstrap, zookeeper 127.0.0.1:$zk_port. Ctrl-C stops it."
if [ -n "$metrics" ]; then log "metrics (Prometheus text format): $metrics"; fi

# Show the brokers' logs until ZooKeeper exits or Ctrl-C. A broker that exits is reported,
# not fatal: scripts/cluster.sh start-broker N brings it back.
tail -n 0 -F "$dir"/broker-*/broker.log &
TAIL_PID=$!
set +e
up=()
for ((id = 1; id <= brokers; id++)); do up[id]=1; done
while :; do
	kill -0 "$ZK_PID" 2>/dev/null || die "ZooKeeper exited (log: $(show "$dir")/zookeeper/zookeeper.log)"
	for ((id = 1; id <= brokers; id++)); do
		if broker_pid "$id" >/dev/null; then
			[ "${up[id]}" = 1 ] || log "broker $id is running again"
			up[id]=1
		elif [ "${up[id]}" = 1 ]; then
			up[id]=0
			log "broker $id is down (log: $(show "$dir")/broker-$id/broker.log); scripts/cluster.sh start-broker $id starts it again"
		fi
	done
	sleep 0.5
done
