# shellcheck shell=bash
# Shared by docker/test.sh and the partition scenarios (sourced, not run): a docker daemon,
# a compose command, free host ports and waiting for healthy containers.

dlog() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
ddie() {
	dlog "error: $*"
	exit 1
}

# ensure_docker: installs Debian's docker.io when there is no docker engine (a docker client
# alone does not do), and starts a daemon when none answers (recorded in DOCKERD_PID, which
# stop_started_dockerd stops).
DOCKERD_PID=
ensure_docker() {
	docker info >/dev/null 2>&1 && return 0
	if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || ddie "docker is not installed: run as root to install Debian's docker.io"
		dlog "installing Debian's docker.io"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >&2; } ||
			ddie "apt-get install docker.io failed"
	fi
	[ "$(id -u)" = 0 ] || ddie "no docker daemon answers and starting one needs root"
	command -v dockerd >/dev/null 2>&1 || ddie "no dockerd (Debian's docker.io has it)"
	dlog "no docker daemon answers: starting dockerd (log: /var/log/samsa-dockerd.log)"
	dockerd >>/var/log/samsa-dockerd.log 2>&1 &
	DOCKERD_PID=$!
	local i
	for ((i = 0; i < 300; i++)); do
		docker info >/dev/null 2>&1 && return 0
		kill -0 "$DOCKERD_PID" 2>/dev/null || ddie "dockerd exited (log: /var/log/samsa-dockerd.log)"
		sleep 0.1
	done
	ddie "dockerd did not answer within 30s (log: /var/log/samsa-dockerd.log)"
}

# stop_started_dockerd: stops the daemon ensure_docker started, if it started one.
stop_started_dockerd() {
	[ -n "$DOCKERD_PID" ] || return 0
	kill -TERM "$DOCKERD_PID" 2>/dev/null || true
	wait "$DOCKERD_PID" 2>/dev/null || true
	DOCKERD_PID=
}

# ensure_compose: sets COMPOSE to the compose command there is: $SAMSA_COMPOSE if set (e.g.
# a standalone compose v2 binary), the docker compose plugin (v2) or Debian's docker-compose
# (1.29, installed when neither is there).
COMPOSE=()
ensure_compose() {
	if [ -n "${SAMSA_COMPOSE:-}" ]; then
		read -r -a COMPOSE <<<"$SAMSA_COMPOSE"
		"${COMPOSE[@]}" version >/dev/null 2>&1 || ddie "SAMSA_COMPOSE=$SAMSA_COMPOSE: '$SAMSA_COMPOSE version' fails"
		return 0
	fi
	if docker compose version >/dev/null 2>&1; then
		COMPOSE=(docker compose)
		return 0
	fi
	if ! command -v docker-compose >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || ddie "neither docker compose nor docker-compose: install Debian's docker-compose"
		dlog "installing Debian's docker-compose"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-compose >&2 ||
			ddie "apt-get install docker-compose failed"
	fi
	COMPOSE=(docker-compose)
}

# free_ports N: prints a base port P such that P..P+N-1 are free on the host: a random block
# between 20000 and the kernel's ephemeral range (outgoing connections take ports there at
# any time), so concurrent runs rarely collide; docker reports a collision at `up` anyway.
free_ports() {
	local n=$1 used base i ok top
	top=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || top=32768
	[ "${top:-0}" -gt 20100 ] || top=32768
	used=$(ss -Hltn 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
	for ((try = 0; try < 50; try++)); do
		base=$((20000 + (RANDOM % ((top - 20000 - n) / 100)) * 100))
		ok=1
		for ((i = 0; i < n; i++)); do
			if grep -qx "$((base + i))" <<<"$used"; then
				ok=0
				break
			fi
		done
		[ "$ok" = 1 ] && {
			echo "$base"
			return 0
		}
	done
	ddie "no $n free ports found"
}

# compose_ids PROJECT: the ids of the project's containers (running or not).
compose_ids() {
	docker ps -aq --filter "label=com.docker.compose.project=$1"
}

# container_of PROJECT SERVICE: the id of SERVICE's container in PROJECT.
container_of() {
	docker ps -aq --filter "label=com.docker.compose.project=$1" --filter "label=com.docker.compose.service=$2" | head -n 1
}

# wait_healthy SECONDS ID...: waits until every container is healthy; fails naming the ones
# that are not (with their last health-check output) when SECONDS pass or one exits.
wait_healthy() {
	local limit=$1 id st pending i
	shift
	for ((i = 0; i < limit * 2; i++)); do
		pending=
		for id in "$@"; do
			st=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' "$id" 2>/dev/null) || st=gone
			case $st in
			"running healthy") ;;
			running*) pending="$pending $id" ;;
			*)
				docker logs --tail 30 "$id" >&2 || true
				ddie "container $(docker inspect -f '{{.Name}}' "$id" 2>/dev/null) is $st"
				;;
			esac
		done
		[ -z "$pending" ] && return 0
		sleep 0.5
	done
	for id in $pending; do
		dlog "not healthy: $(docker inspect -f '{{.Name}}: {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{range .State.Health.Log}} | {{.Output}}{{end}}{{end}}' "$id")"
	done
	ddie "containers not healthy within ${limit}s"
}
