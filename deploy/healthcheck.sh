#!/bin/bash
# The container's HEALTHCHECK (Dockerfile): GET /healthz of the `mcpmux serve --http` in this
# container, over bash's /dev/tcp because the slim runtime image has no curl or wget. Exit 0 on
# a 200, 1 otherwise (refused, closed, any other status, or no status line within 5 s).
# MCPMUX_HEALTH_PORT: the port `serve --http` listens on (8080, the image's CMD).
set -eu
port="${MCPMUX_HEALTH_PORT:-8080}"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$port" >&3
IFS= read -r -t 5 status <&3
case "$status" in
"HTTP/1.1 200 "*) exit 0 ;;
*) exit 1 ;;
esac
