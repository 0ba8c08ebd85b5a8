#!/usr/bin/env bash
# Fault tooling for containers: network partitions, pause, kill. Run as root on the docker host.
#
#   net.sh ip CONTAINER                  the container's IP addresses (one per network)
#   net.sh cut CONTAINER PEER...         drop every packet between CONTAINER and each PEER
#                                        (a container name or an IP), both directions
#   net.sh uncut CONTAINER PEER...       undo cut for those peers
#   net.sh heal CONTAINER                undo every cut of CONTAINER
#   net.sh rules CONTAINER               print CONTAINER's fault rules
#   net.sh flap CONTAINER PEER SECONDS N cut and heal the link N times, SECONDS each way
#   net.sh disconnect CONTAINER [NET]    docker network disconnect (all of the container's
#                                        networks when NET is omitted); reconnect undoes it
#   net.sh reconnect CONTAINER NET...    docker network connect
#   net.sh pause|unpause|kill|start CONTAINER
#
# A cut is a pair of DROP rules (INPUT from the peer, OUTPUT to the peer) in the container's
# own network namespace, entered from the host with nsenter: the image needs neither
# iptables nor NET_ADMIN, and traffic from anything not named (the host, clients on the
# bridge) still flows. The rules live in the chain SAMSA-FAULT so heal removes exactly them;
# they vanish with the namespace when the container stops.
set -euo pipefail

chain=SAMSA-FAULT

die() {
	echo "net.sh: $*" >&2
	exit 1
}

pid_of() {
	local pid
	pid=$(docker inspect -f '{{.State.Pid}}' "$1") || die "no container $1"
	[ "$pid" != 0 ] || die "container $1 is not running"
	echo "$pid"
}

ips_of() {
	docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$1"
}

# peer_ips NAME|IP: the addresses a rule for that peer must cover.
peer_ips() {
	if [[ $1 =~ ^[0-9.]+$ ]]; then
		echo "$1"
	else
		local ips
		ips=$(ips_of "$1") || die "no container $1"
		[ -n "${ips// /}" ] || die "container $1 has no IP address (not running?)"
		echo "$ips"
	fi
}

# ipt CONTAINER ARGS...: iptables in CONTAINER's network namespace. -w waits for the xtables
# lock instead of failing when another cut runs at the same moment.
ipt() {
	local pid
	pid=$(pid_of "$1")
	shift
	nsenter -t "$pid" -n iptables -w "$@"
}

ensure_chain() {
	local c=$1
	ipt "$c" -N "$chain" 2>/dev/null || true
	ipt "$c" -C INPUT -j "$chain" 2>/dev/null || ipt "$c" -I INPUT 1 -j "$chain"
	ipt "$c" -C OUTPUT -j "$chain" 2>/dev/null || ipt "$c" -I OUTPUT 1 -j "$chain"
}

cut() {
	local c=$1 peer ip
	shift
	ensure_chain "$c"
	for peer in "$@"; do
		for ip in $(peer_ips "$peer"); do
			ipt "$c" -C "$chain" -s "$ip" -j DROP 2>/dev/null || ipt "$c" -A "$chain" -s "$ip" -j DROP
			ipt "$c" -C "$chain" -d "$ip" -j DROP 2>/dev/null || ipt "$c" -A "$chain" -d "$ip" -j DROP
		done
	done
}

uncut() {
	local c=$1 peer ip
	shift
	for peer in "$@"; do
		for ip in $(peer_ips "$peer"); do
			while ipt "$c" -D "$chain" -s "$ip" -j DROP 2>/dev/null; do :; done
			while ipt "$c" -D "$chain" -d "$ip" -j DROP 2>/dev/null; do :; done
		done
	done
}

heal() {
	ipt "$1" -F "$chain" 2>/dev/null || true
}

[ $# -ge 2 ] || {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
}
cmd=$1
c=$2
shift 2
case $cmd in
ip) ips_of "$c" ;;
cut)
	[ $# -ge 1 ] || die "cut $c: name a peer"
	cut "$c" "$@"
	;;
uncut) uncut "$c" "$@" ;;
heal) heal "$c" ;;
rules) ipt "$c" -S "$chain" 2>/dev/null || true ;;
flap)
	[ $# -eq 3 ] || die "flap CONTAINER PEER SECONDS N"
	for ((i = 0; i < $3; i++)); do
		cut "$c" "$1"
		sleep "$2"
		uncut "$c" "$1"
		sleep "$2"
	done
	;;
disconnect)
	nets=${1:-$(docker inspect -f '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}' "$c")}
	for n in $nets; do docker network disconnect "$n" "$c"; done
	;;
reconnect)
	[ $# -ge 1 ] || die "reconnect $c NET..."
	# compose resolves a service by its alias on the network: give it back.
	svc=$(docker inspect -f '{{index .Config.Labels "com.docker.compose.service"}}' "$c")
	for n in "$@"; do docker network connect ${svc:+--alias "$svc"} "$n" "$c"; done
	;;
pause | unpause | kill | start) docker "$cmd" "$c" >/dev/null ;;
*) die "unknown command $cmd" ;;
esac
