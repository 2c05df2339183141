"""A real JupyterHub running the hub exchange service, with users, groups and tokens made through its REST API.

The hub is started and stopped by :mod:`support.hub` (``start_hub``, ``stop_hub``, ``end_everything``:
the hub tier's own), from the students' environment of the exchange tier (``jupyterhub`` pinned by
``requirements/hub.txt``), with Debian's ``configurable-http-proxy`` and JupyterHub's
``DummyAuthenticator`` (no logins happen here: every caller uses an API token the hub issued). Its
config runs the exchange service as a hub-managed service (``c.JupyterHub.services``, the
service's role with ``read:users:name`` and ``read:users:groups``, as docs/course.md's "Exchange
through the hub" says) from a copy of this checkout's package, and a second service,
``test-admin``, whose token (in the admin role) makes users, groups and tokens. Everything listens
on 127.0.0.1. :func:`require_exchange_hub` skips without the proxy (the tier's rule: CI fails).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import course_users, tier_gate
from support import hub as hub_support

SERVICE = "nbgrader-exchange"
#: The upload cap the tests' service runs with (bytes): small, so the cap's test sends little.
UPLOAD_CAP = 2 * 1024 * 1024


def require_exchange_hub() -> None:
    """Skip without ``configurable-http-proxy`` (or the users' tools), except under CI, where it fails."""
    tier_gate.require("hub", course_users.exchange_reason() or hub_support.proxy_reason())


@dataclass
class ExchangeHub:
    """The running hub: its URL, the admin service's token, the exchange service's URL (through the proxy)."""

    hub: hub_support.Hub
    url: str
    admin_token: str
    storage: Path

    @property
    def service_url(self) -> str:
        return f"{self.url}/services/{SERVICE}/"

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        """The hub's REST API (``/hub/api<path>``) with ``token`` (default the admin's); the JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/hub/api{path}", data=data, method=method,
                                         headers={"Authorization": f"token {token or self.admin_token}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                text = response.read()
        except urllib.error.HTTPError as err:
            err.msg = f"{err.msg}: {err.read().decode(errors='replace')}"
            raise
        return json.loads(text) if text else None

    def user(self, name: str, *groups: str) -> str:
        """Make hub user ``name`` in ``groups`` (each made when missing); returns ``name``."""
        self.api("POST", f"/users/{name}")
        for group in groups:
            with contextlib.suppress(urllib.error.HTTPError):  # 409: the group exists already
                self.api("POST", f"/groups/{group}")
            self.api("POST", f"/groups/{group}/users", {"users": [name]})
        return name

    def token(self, name: str, *, scopes: list[str] | None = None, expires_in: int | None = None) -> str:
        """A new API token of ``name``'s, issued by the hub (default scopes: the one the exchange needs, which
        docs/course.md's ``c.Spawner.server_token_scopes`` adds to a user's server token)."""
        body: dict[str, Any] = {"note": "exchange test",
                                "scopes": scopes if scopes is not None else [ACCESS_SCOPE]}
        if expires_in is not None:
            body["expires_in"] = expires_in
        return self.api("POST", f"/users/{name}/tokens", body)["token"]

    def revoke(self, name: str, token: str) -> None:
        """Revoke ``token`` of ``name``'s through the hub."""
        model = self.api("GET", "/user", token=token)
        assert model["name"] == name
        for found in self.api("GET", f"/users/{name}/tokens")["api_tokens"]:
            self.api("DELETE", f"/users/{name}/tokens/{found['id']}")


#: The scope a user's token needs for the exchange service.
ACCESS_SCOPE = f"access:services!service={SERVICE}"
#: What a user's single-user server token is given (docs/course.md, "Exchange through the hub").
SERVER_TOKEN_SCOPES = ["users:activity!user", "access:servers!server", ACCESS_SCOPE]


def local_hub_settings(state: Path, ports: dict[str, int]) -> str:
    """The settings every hub of this module shares: JupyterHub's dummy authenticator, the hub, its proxy and its
    public port on 127.0.0.1 (``ports``: ``public``, ``hub``, ``proxy_api``), its database, cookie secret and pid
    files under ``state``."""
    return textwrap.dedent(f"""
        c.JupyterHub.authenticator_class = "dummy"
        c.JupyterHub.ip = "127.0.0.1"
        c.JupyterHub.port = {ports['public']}
        c.JupyterHub.hub_ip = "127.0.0.1"
        c.JupyterHub.hub_port = {ports['hub']}
        c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports['proxy_api']}"
        c.ConfigurableHTTPProxy.pid_file = {str(state / 'proxy.pid')!r}
        c.JupyterHub.db_url = {f'sqlite:///{state / "jupyterhub.sqlite"}'!r}
        c.JupyterHub.cookie_secret_file = {str(state / 'cookie_secret')!r}
        c.JupyterHub.pid_file = {str(state / 'hub.pid')!r}
        """)


def hub_config(state: Path, ports: dict[str, int], python: Path, package: Path, admin_token: str,
               storage: Path) -> str:
    """The hub's ``jupyterhub_config.py`` (see the module)."""
    return local_hub_settings(state, ports) + textwrap.dedent(f"""
        c.JupyterHub.extra_user_scopes = [{ACCESS_SCOPE!r}]
        c.Spawner.server_token_scopes = {SERVER_TOKEN_SCOPES!r}
        c.JupyterHub.services = [
            {{
                "name": {SERVICE!r},
                "url": "http://127.0.0.1:{ports['service']}",
                "command": [{str(python)!r}, "-m", "ch11_autograder.exchange.hub.service",
                            "--storage", {str(storage)!r}, "--upload-cap", "{UPLOAD_CAP}"],
                "environment": {{"PYTHONPATH": {str(package)!r}}},
            }},
            {{"name": "test-admin", "api_token": {admin_token!r}}},
        ]
        c.JupyterHub.load_roles = [
            {{"name": {SERVICE!r}, "scopes": ["read:users:name", "read:users:groups"], "services": [{SERVICE!r}]}},
            {{"name": "admin", "services": ["test-admin"]}},
        ]
        """)


@contextlib.contextmanager
def exchange_hub(root: Path) -> Iterator[ExchangeHub]:
    """A hub with the exchange service under ``root`` (state, package copy, storage), stopped after."""
    student_venv, _grader_venv = course_users.course_venvs()
    state = root / "hub"
    state.mkdir(mode=0o700)
    package = course_users.install_package_copy(root / "lib")
    storage = root / "exchange-storage"
    ports = {name: hub_support.free_port() for name in ("public", "hub", "proxy_api", "service")}
    admin_token = secrets.token_hex(32)
    (state / "jupyterhub_config.py").write_text(
        hub_config(state, ports, student_venv / "bin" / "python", package, admin_token, storage))
    url = f"http://127.0.0.1:{ports['public']}"
    hub = None
    try:
        hub = hub_support.start_hub(url, state, student_venv)
        running = ExchangeHub(hub, url, admin_token, storage)
        _wait_for_service(running)
        yield running
    finally:
        if hub is not None and hub.process.poll() is None:
            with contextlib.suppress(AssertionError, OSError):
                hub_support.stop_hub(hub)  # SIGINT: the hub stops its services as it stops
        hub_support.end_everything(hub, [], state)
        _end_service(storage)


def service_pids(storage: Path) -> list[int]:
    """The pids of the exchange service processes keeping ``storage`` (found by their command line)."""
    needle = f"exchange.hub.service\0--storage\0{storage}\0".encode()
    found = []
    for pid in hub_support.processes_of({os.getuid()}):
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def _end_service(storage: Path) -> None:
    """SIGKILL to the exchange service of this hub if it outlived the hub (found by its storage folder)."""
    for pid in service_pids(storage):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def wait_for_service(running: ExchangeHub, timeout: float = hub_support.HUB_START_TIMEOUT) -> None:
    """Until the exchange service answers through the hub's proxy (a restarted one too)."""
    _wait_for_service(running, timeout)


def _wait_for_service(running: ExchangeHub, timeout: float = hub_support.HUB_START_TIMEOUT) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{running.service_url}api/courses", timeout=5)
        except urllib.error.HTTPError as err:
            if err.code == 401:  # the service answers: it wants a token
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the exchange service did not answer at {running.service_url}:\n"
                       f"{running.hub.log_text()[-4000:]}")


# --------------------------------------------------------------------------- a hub whose users share one uid

#: docs/course.md's blocks of "Exchange through the hub", by the text that marks each: the hub's (the service,
#: its role, the users' scopes, the plug-in's URL) and the users' ``nbgrader_config.py`` lines.
EXCHANGE_BLOCK_MARK = "exchange_service = {"
PLUGIN_BLOCK_MARK = "setattr(c.ExchangeFactory"


def page_exchange_blocks(storage: Path, grader_python: Path, service_port: int, public_port: int,
                         page: Path = hub_support.COURSE_PAGE) -> dict[str, str]:
    """The page's two blocks of :data:`EXCHANGE_BLOCK_MARK` and :data:`PLUGIN_BLOCK_MARK`, with the page's paths and
    ports replaced by this machine's; each replaced text must be found, so a page that changes them fails here."""
    blocks = hub_support.page_blocks(page, (EXCHANGE_BLOCK_MARK, PLUGIN_BLOCK_MARK))
    text = blocks[EXCHANGE_BLOCK_MARK]
    for old, new in [("/opt/ch11/grader/bin/python", str(grader_python)), ("/var/lib/nbgrader-exchange", str(storage)),
                     ("http://127.0.0.1:8010", f"http://127.0.0.1:{service_port}"),
                     ("http://127.0.0.1:8000", f"http://127.0.0.1:{public_port}")]:
        assert old in text, f"the page's exchange block no longer holds {old!r}: update tests/support/hub_exchange.py"
        text = text.replace(old, new)
    return {EXCHANGE_BLOCK_MARK: text, PLUGIN_BLOCK_MARK: blocks[PLUGIN_BLOCK_MARK]}


@dataclass(frozen=True)
class SharedUidPlaces:
    """What :func:`shared_uid_config` puts where: the shared unix user, the users' homes (``<homes>/<hub name>``),
    the students' environment, the plug-in's and the package's copies, the folder in Jupyter's config path."""

    unix_user: str
    homes: Path
    student_venv: Path
    grader_venv: Path
    plugin: Path
    package: Path
    jupyter_config: Path
    storage: Path


def shared_uid_config(state: Path, ports: dict[str, int], places: SharedUidPlaces, admin_token: str,
                      password: str) -> str:
    """The ``jupyterhub_config.py`` of a hub whose users' servers all run as one unix user (see the module of
    ``tests/hub/test_hub_exchange_term.py``): the hub's own settings, then the page's exchange block as written."""
    blocks = page_exchange_blocks(places.storage, places.grader_venv / "bin" / "python", ports["service"],
                                  ports["public"])
    return textwrap.dedent(f"""
        import os

        from jupyterhub.spawner import SimpleLocalProcessSpawner, set_user_setuid


        class SharedUidSpawner(SimpleLocalProcessSpawner):
            \"\"\"Every user's server as the one unix user {places.unix_user!r} (Zero to JupyterHub's
            singleuser.uid), each in a home of its own (the template's); HOME and USER are the hub user's.\"\"\"

            def make_preexec_fn(self, name):
                become, home = set_user_setuid({places.unix_user!r}, chdir=False), self.home_dir

                def preexec():
                    become()
                    os.makedirs(home, 0o700, exist_ok=True)
                    os.chdir(home)

                return preexec


        """) + local_hub_settings(state, ports) + textwrap.dedent(f"""
        c.DummyAuthenticator.password = {password!r}
        c.JupyterHub.spawner_class = SharedUidSpawner
        c.SimpleLocalProcessSpawner.home_dir_template = {str(places.homes / '{username}')!r}
        c.Spawner.cmd = [{str(places.student_venv / 'bin' / 'jupyterhub-singleuser')!r}]
        c.Spawner.default_url = "/lab"
        c.Spawner.http_timeout = 180
        c.Spawner.start_timeout = 180
        # The students' image: their environment, the plug-in's three paths alone, the config every pod mounts.
        c.Spawner.environment = {{"PYTHONPATH": {str(places.plugin)!r},
                                 "JUPYTER_CONFIG_PATH": {str(places.jupyter_config)!r}}}
        c.JupyterHub.services = [{{"name": "test-admin", "api_token": {admin_token!r}}}]
        """) + f"# From course.md, \"Exchange through the hub\":\n{blocks[EXCHANGE_BLOCK_MARK]}\n" \
        + textwrap.dedent(f"""
        exchange_service["environment"] = {{"PYTHONPATH": {str(places.package)!r}}}
        c.JupyterHub.services.append(exchange_service)
        c.JupyterHub.load_roles.append({{"name": "admin", "services": ["test-admin"]}})
        """)


def plugin_copy(package: Path, dest: Path) -> Path:
    """The plug-in's three paths of ``package`` (a copy of the grading package's folder's parent) under ``dest``, as
    docs/course.md puts them in the students' image; ``dest``."""
    (dest / "ch11_autograder" / "exchange").mkdir(parents=True)
    shutil.copy(package / "ch11_autograder" / "__init__.py", dest / "ch11_autograder" / "__init__.py")
    shutil.copy(package / "ch11_autograder" / "exchange" / "__init__.py",
                dest / "ch11_autograder" / "exchange" / "__init__.py")
    shutil.copytree(package / "ch11_autograder" / "exchange" / "hub", dest / "ch11_autograder" / "exchange" / "hub",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest
