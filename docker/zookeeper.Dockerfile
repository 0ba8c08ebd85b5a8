# The ZooKeeper image docker/test.sh runs where no registry is reachable: Debian's zookeeper
# package (installed by docker/images.sh into BASE) with the official zookeeper image's
# conventions, so docker/compose.yaml runs unchanged on it or on zookeeper:3.8.
ARG BASE=samsa-test/zookeeper-rootfs:3.8
FROM ${BASE}
RUN mkdir -p /conf /data /datalog /logs && chown zookeeper:zookeeper /conf /data /datalog /logs
COPY zookeeper-entrypoint.sh /docker-entrypoint.sh
ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog ZOO_LOG_DIR=/logs
USER zookeeper
# /logs is not a volume (the official image's is): the server logs to stderr, docker logs.
VOLUME ["/data", "/datalog"]
EXPOSE 2181 2888 3888
ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["zkServer.sh", "start-foreground"]
