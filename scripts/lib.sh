# Shared by scripts/cluster.sh and scripts/test.sh (sourced, not run).
# Installs Debian packages when missing and runs a standalone ZooKeeper as a plain process.

ZK_JAR=/usr/share/java/zookeeper.jar
SLF4J_JAR=/usr/share/java/slf4j-simple.jar

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Go may live outside PATH when run through sudo or from CI.
ensure_go() {
	if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
		PATH="$PATH:/usr/local/go/bin"
	fi
	command -v go >/dev/null 2>&1 || die "Go is not installed (https://go.dev/doc/install)"
}

# pkg_ok NAME: the package is installed and what we use from it is there.
pkg_ok() {
	# A purged package can leave its files (libzookeeper-java keeps zookeeper.jar), so ask dpkg
	# when there is one.
	if command -v dpkg-query >/dev/null 2>&1; then
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || return 1
	fi
	case $1 in
	zookeeper) [ -r "$ZK_JAR" ] && [ -r "$SLF4J_JAR" ] && command -v java >/dev/null 2>&1 ;;
	kcat) command -v kcat >/dev/null 2>&1 ;;
	chromium) command -v chromium >/dev/null 2>&1 ;; # integration/webview_browser_test.go
	openssl) command -v openssl >/dev/null 2>&1 ;; # scripts/gen-certs.sh (docs/study/10-security.md)
	*) return 1 ;;
	esac
}

# ensure_packages NAME...: apt-get installs the missing ones, as root or through sudo.
ensure_packages() {
	local missing=() p
	for p in "$@"; do
		pkg_ok "$p" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null 2>&1 ||
		die "missing ${missing[*]} and no apt-get here: install them (Debian packages: ${missing[*]})"
	local as=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "missing ${missing[*]}: run as root or install sudo"
		# No terminal to ask for a password on (CI): fail instead of hanging.
		if [ -t 0 ]; then as=(sudo); else as=(sudo -n); fi
	fi
	log "installing ${missing[*]} (apt-get)"
	local t0=$SECONDS
	"${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 update -q ||
		die "apt-get update failed"
	"${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 install -y -q \
		--no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
	for p in "${missing[@]}"; do
		pkg_ok "$p" || die "$p still missing after apt-get install"
	done
	log "installed ${missing[*]} in $((SECONDS - t0))s"
}

# zk_4lw PORT WORD: prints ZooKeeper's answer to a four-letter word (empty if none).
zk_4lw() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}

# port_busy PORT: something accepts connections on 127.0.0.1:PORT.
port_busy() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# zk_start DIR PORT: writes DIR/zoo.cfg, starts ZooKeeper in the background with its log in
# DIR/zookeeper.log, sets ZK_PID and waits until it serves (srvr prints "Mode:").
zk_start() {
	local dir=$1 port=$2
	mkdir -p "$dir/data"
	cat >"$dir/zoo.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
EOF
	# setsid: its own session, so a Ctrl-C meant for the script does not reach it.
	setsid java -cp "$ZK_JAR:$SLF4J_JAR" -Dzookeeper.log.dir="$dir" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
		</dev/null >"$dir/zookeeper.log" 2>&1 &
	ZK_PID=$!
	local i
	for ((i = 0; i < 300; i++)); do
		if zk_4lw "$port" srvr | grep -q '^Mode:'; then
			return 0
		fi
		kill -0 "$ZK_PID" 2>/dev/null || {
			tail -n 30 "$dir/zookeeper.log" >&2
			die "ZooKeeper exited during start-up (log: $dir/zookeeper.log)"
		}
		sleep 0.1
	done
	tail -n 30 "$dir/zookeeper.log" >&2
	die "ZooKeeper did not serve on 127.0.0.1:$port within 30s (log: $dir/zookeeper.log)"
}

# stop_pid PID NAME SECONDS: SIGTERM, then wait_pid.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || true
	wait_pid "$@"
}

# wait_pid PID NAME SECONDS: waits up to SECONDS for PID to exit, then SIGKILLs it. Sends no
# second SIGTERM: a broker takes a second signal as "exit now, skip the clean shutdown".
wait_pid() {
	local pid=$1 name=$2 secs=$3 i
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
		sleep 0.1
	done
	log "$name did not stop within ${secs}s: killing it"
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# Children run in their own sessions (setsid), so Ctrl-C reaches only this script, which
# stops them in order: brokers first (they deregister from ZooKeeper), then ZooKeeper.
stop_all() {
	[ -n "$stopping" ] && return
	stopping=1
	# A second Ctrl-C while stopping kills everything at once.
	trap 'kill -KILL "${broker_pids[@]}" $ZK_PID 2>/dev/null; exit 130' INT TERM HUP
	if [ -n "${TAIL_PID:-}" ]; then kill "$TAIL_PID" 2>/dev/null || true; fi
	# scripts/cluster.sh knows its brokers by pid file: one restarted from another terminal
	# is not in broker_pids.
	if declare -F cluster_live_pids >/dev/null; then
		mapfile -t broker_pids < <(cluster_live_pids)
	fi
	if [ ${#broker_pids[@]} -gt 0 ]; then
		# One at a time: stopped together, the last ones find no controller to shut down
		# through and retry for seconds (controlled.shutdown.retry.backoff.ms).
		log "stopping brokers one at a time (SIGTERM: a controlled shutdown each)"
		local i=0 pid
		for pid in "${broker_pids[@]}"; do
			i=$((i + 1))
			stop_pid "$pid" "broker $i" 60
		done
	fi
	if [ -n "$ZK_PID" ]; then
		log "stopping ZooKeeper"
		stop_pid "$ZK_PID" ZooKeeper 15
	fi
	log "stopped"
}

# cluster_traps installs stop_all for a cluster script: set ZK_PID and append to broker_pids
# as children start.
cluster_traps() {
	ZK_PID=
	broker_pids=()
	stopping=
	trap 'stop_all; exit 130' INT TERM
	trap 'stop_all; exit 129' HUP # the terminal went away
	trap 'stop_all' EXIT
}
