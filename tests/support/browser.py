"""A real Jupyter server with nbgrader's formgrader, and Debian's Chromium driven by Playwright.

The browser tier (``tests/browser/``) looks at the formgrader as an instructor does. Nothing is
downloaded at run time: Playwright's Python client (pinned in requirements/lock.txt) launches
the system ``chromium`` (``apt-get install chromium``, done by ``.ci/browser.sh`` under
``make test``); Playwright's own browser builds are never installed.

Without the browser the tier skips with the reason, except under CI (``$CI`` set), where it
fails: CI must exercise it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support import jupyter_env, tier_gate

#: Chromium flags for a closed network, as root, with no display: no sandbox (root), no GPU, and
#: none of the background connections (updates, sync, QUIC probes) that this network refuses.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Seconds a Jupyter server may take to answer after it starts (about 3 on an idle 2-core machine).
SERVER_START_TIMEOUT = 60.0


def chromium_path() -> str | None:
    """The system Chromium (``$CH11_CHROMIUM`` overrides), or ``None``."""
    return os.environ.get("CH11_CHROMIUM") or shutil.which("chromium")


def browser_reason() -> str | None:
    """``None`` when the browser tier can run here, else why not."""
    if chromium_path() is None:
        return "no chromium on PATH (apt-get install chromium, or `make browser` as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (it is pinned in requirements/lock.txt)"
    return None


def require_browser() -> None:
    """Skip without a browser, except under CI (``$CI`` set), where the tier must run: fail."""
    tier_gate.require("browser", browser_reason())


@dataclass(frozen=True)
class JupyterServer:
    """A running ``jupyter server`` on 127.0.0.1.

    Attributes:
        url: base URL, without a trailing slash.
        token: the server's token; requests carry it as ``Authorization: token <token>``.
        root: the course directory it serves (its working directory, so the formgrader
            reads the course's ``nbgrader_config.py`` and takes it as ``CourseDirectory.root``).
        log: the server's combined stdout and stderr.
    """

    url: str
    token: str
    root: Path
    log: Path

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def jupyter_server(course: Path, state: Path) -> Iterator[JupyterServer]:
    """Run ``jupyter server`` with nbgrader's server extensions on ``course`` until the block ends.

    ``state`` (created) holds the server's own config, data and runtime folders, so no user's
    Jupyter settings reach the test, and its log. The port is a free loopback port; the
    server is terminated (then killed after 10 s) when the block ends.

    Raises:
        RuntimeError: the server exited or did not answer within ``SERVER_START_TIMEOUT``
            seconds; the message holds the end of its log.
    """
    state.mkdir(parents=True, exist_ok=True)
    port, token = _free_port(), secrets.token_hex(16)
    log = state / "jupyter-server.log"
    # The server finds nbgrader's extension only through the config path (<prefix>/etc/jupyter): not JUPYTER_NO_CONFIG.
    env = {**jupyter_env.planted(os.environ, state / "config"), "JUPYTER_DATA_DIR": str(state / "data"),
           "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={course}", f"--IdentityProvider.token={token}",
            "--allow-root"]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = JupyterServer(f"http://127.0.0.1:{port}", token, course, log)
    try:
        _wait_until_up(server, process)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_up(server: JupyterServer, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    request = urllib.request.Request(f"{server.url}/api/status", headers=server.auth_headers)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(request, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    tail = server.log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"jupyter server on {server.url} did not answer (exit code {process.poll()}):\n{tail}")


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (``playwright.sync_api.Browser``) from the system package.

    Playwright gives each launch a fresh temporary profile (user-data-dir) and removes it after.
    """
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    executable = chromium_path()
    assert executable is not None, "require_browser() first"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()
