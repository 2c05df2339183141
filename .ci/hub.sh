#!/usr/bin/env bash
# Make Debian's configurable-http-proxy available for the hub tier (tests/hub/): the test runs
# JupyterHub (from PyPI, in the tier's venv: requirements/hub.txt) with this proxy, as
# docs/course.md ("The hub") sets it up. Chromium comes from .ci/browser.sh. Idempotent: a
# proxy already on PATH is left alone. Without root nothing can be installed: the hub tests
# then skip (and fail when $CI is set).
set -euo pipefail
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"

if command -v configurable-http-proxy >/dev/null 2>&1; then
    echo "hub: $(command -v configurable-http-proxy) already installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "hub: no configurable-http-proxy on PATH and this is not root, so none can be installed here;" \
         "the hub tests will be skipped (apt-get install node-configurable-http-proxy, or run as root, to include them)" >&2
    exit 0
fi
echo "hub: installing node-configurable-http-proxy"
apt_install node-configurable-http-proxy
echo "hub: $(command -v configurable-http-proxy) installed"
