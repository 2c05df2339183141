#!/usr/bin/env bash
# Make a Docker engine available for the grading-image tests. CI machines reach
# Debian's packages but no image registry: the tests build their own base image
# with debootstrap, so both come from apt here. Idempotent: an engine that
# already answers is left alone. Without root nothing can be installed or
# started: the Docker tests then skip (and fail when $CI is set).
set -euo pipefail
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"

if docker info >/dev/null 2>&1; then
    echo "docker engine: already running"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "docker engine: none answers and this is not root, so none can be started here;" \
         "the Docker tests will be skipped (start dockerd, or run as root, to include them)" >&2
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    echo "docker engine: installing docker.io and debootstrap"
    apt_install docker.io debootstrap
fi
echo "docker engine: starting dockerd"
nohup dockerd >/tmp/ch11-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
        echo "docker engine: ready"
        exit 0
    fi
    sleep 1
done
echo "docker engine: dockerd did not answer within 60 s; its log:" >&2
tail -n 40 /tmp/ch11-dockerd.log >&2 || true
exit 1
