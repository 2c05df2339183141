#!/usr/bin/env bash
# Make Debian's Chromium available for the browser tier (tests/browser/): the
# formgrader is driven by Playwright's Python client with this system browser, so
# nothing is downloaded at run time (Playwright's own browser builds are never
# installed). Idempotent: a chromium already on PATH is left alone. Without root
# nothing can be installed: the browser tests then skip (and fail when $CI is set).
set -euo pipefail
# shellcheck source=apt.sh
. "$(dirname "$0")/apt.sh"

if command -v chromium >/dev/null 2>&1; then
    echo "browser: $(command -v chromium) already installed"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "browser: no chromium on PATH and this is not root, so none can be installed here;" \
         "the browser tests will be skipped (apt-get install chromium, or run as root, to include them)" >&2
    exit 0
fi
echo "browser: installing chromium"
apt_install chromium
echo "browser: $(command -v chromium) installed"
