# The samsa image docker/test.sh runs where no registry is reachable: the static binary
# docker/images.sh builds on the host, on the locally built Debian base, laid out as
# docker/Dockerfile's image (same user, paths, ports, entrypoint and health check).
ARG BASE=samsa-test/debian:bookworm
FROM ${BASE}
COPY --chown=65532:65532 samsa /usr/local/bin/samsa
RUN mkdir -p /var/lib/samsa && chown 65532:65532 /var/lib/samsa
USER 65532:65532
VOLUME ["/var/lib/samsa"]
EXPOSE 9092 29092 9404
HEALTHCHECK --interval=5s --timeout=5s --start-period=120s --retries=3 CMD ["/usr/local/bin/samsa", "docker-health"]
ENTRYPOINT ["/usr/local/bin/samsa"]
CMD ["docker-run"]
