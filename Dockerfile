# The `mcpmux serve` image that deploy/ runs: `docker build -t mcpmux:latest .`
# (add `--build-arg MCPMUX_COMMIT=$(git rev-parse --short HEAD)` for `mcpmux --version` to name
# the commit: .git stays out of the build context).
#
# Config and tokens are mounted, never baked in: the config at /etc/mcpmux/mcpmux.toml (the CMD
# reads it; without it `serve` stops and says so), the gateway token as MCPMUX_GATEWAY_TOKEN or
# `--token-file` (a non-loopback address refuses to serve without one), upstream OAuth tokens
# and the tool cache on volumes at /var/lib/mcpmux and /var/cache/mcpmux. Stdio servers in the
# config need their commands in the image: build FROM this one and add them.

# Debian 12's glibc (2.36) in both stages: the binary asks for no newer glibc than the runtime
# has, and only libc-level libraries (crates/mcpmux-cli/tests/suite/cli_install.rs checks both).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
ARG MCPMUX_COMMIT=
ENV MCPMUX_COMMIT=${MCPMUX_COMMIT}
# The profile releases ship (Cargo.toml: LTO, size-optimised).
RUN cargo build --locked --profile dist -p mcpmux-cli

FROM debian:bookworm-slim
# No apt: the CA roots come from the build stage (HTTPS and wss:// upstreams verify against
# them), the health check is bash (deploy/healthcheck.sh).
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /src/target/dist/mcpmux /usr/local/bin/mcpmux
COPY deploy/healthcheck.sh /usr/local/bin/mcpmux-healthcheck
# Uid 10001: what deploy/k8s/deployment.yaml's securityContext runs as.
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/mcpmux --create-home mcpmux \
    && mkdir -p /etc/mcpmux /var/cache/mcpmux \
    && chown mcpmux:mcpmux /var/cache/mcpmux
USER 10001:10001
WORKDIR /var/lib/mcpmux
ENV HOME=/var/lib/mcpmux \
    XDG_CACHE_HOME=/var/cache/mcpmux \
    MCPMUX_TOKEN_FILE=/var/lib/mcpmux/tokens.json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=6s --start-period=10s --retries=3 CMD ["mcpmux-healthcheck"]
# ENTRYPOINT the binary, CMD its `serve` arguments: deploy/k8s's `args:` replace the CMD, and
# `docker run … mcpmux:latest auth login SERVER` (or `tools`) runs another subcommand in the
# same setting.
ENTRYPOINT ["mcpmux"]
CMD ["serve", "--http", "0.0.0.0:8080", "--config", "/etc/mcpmux/mcpmux.toml"]
