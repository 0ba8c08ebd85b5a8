#!/bin/bash
# The official zookeeper image's docker-entrypoint.sh conventions on Debian's zookeeper
# package: ZOO_MY_ID (the myid file), ZOO_SERVERS ("server.1=zoo1:2888:3888;2181 ..."),
# ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS,
# ZOO_4LW_COMMANDS_WHITELIST (srvr, which health checks use), ZOO_CFG_EXTRA, JVMFLAGS; a
# mounted $ZOO_CONF_DIR/zoo.cfg is used as it is.
set -euo pipefail

conf=$ZOO_CONF_DIR/zoo.cfg
if [ ! -f "$conf" ]; then
	{
		echo "dataDir=$ZOO_DATA_DIR"
		echo "dataLogDir=$ZOO_DATA_LOG_DIR"
		echo "tickTime=${ZOO_TICK_TIME:-2000}"
		echo "initLimit=${ZOO_INIT_LIMIT:-5}"
		echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
		echo "autopurge.snapRetainCount=${ZOO_AUTOPURGE_SNAPRETAINCOUNT:-3}"
		echo "autopurge.purgeInterval=${ZOO_AUTOPURGE_PURGEINTERVAL:-0}"
		echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
		echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
		echo "admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-false}"
		echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
		if [ -z "${ZOO_SERVERS:-}" ]; then
			echo "server.1=localhost:2888:3888;2181"
		else
			for s in $ZOO_SERVERS; do echo "$s"; done
		fi
		for kv in ${ZOO_CFG_EXTRA:-}; do echo "$kv"; done
	} >"$conf"
fi
case ${ZOO_MY_ID:-1} in
'' | *[!0-9]*)
	echo "zookeeper: ZOO_MY_ID must be a number, got '$ZOO_MY_ID'" >&2
	exit 1
	;;
esac
[ -f "$ZOO_DATA_DIR/myid" ] || echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"

if [ "${1:-}" = zkServer.sh ] && [ "${2:-}" = start-foreground ]; then
	# Debian's zkServer.sh reads /etc/zookeeper; run the server class directly on our config.
	# shellcheck disable=SC2086 # JVMFLAGS is a list of JVM options
	exec java ${JVMFLAGS:--Xmx256m} -Dzookeeper.log.dir="$ZOO_LOG_DIR" \
		-cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/slf4j-api.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$conf"
fi
exec "$@"
