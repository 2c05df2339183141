"""A real JupyterHub for the hub tier, configured from docs/course.md itself.

The hub tier (``tests/hub/``) runs the single-machine hub that docs/course.md ("The hub")
describes: JupyterHub from the students' environment (the exchange tier's venv, which holds
``jupyterhub`` pinned by ``requirements/hub.txt``), Debian's ``configurable-http-proxy``, PAM
logins of real unix users, the local-process spawner, JupyterLab with nbgrader's Assignments
tab, the graders' group, the PATH of every server and login shell, the instructor's
``formgrader`` server and the grading service. The page's blocks that make these (:data:`BLOCK_MARKS`:
the graders' group of step 5, the ``/etc/profile.d`` file of step 6, the hub's config and its
services block of step 9) are read from the page and run or written as they are, with only the
page's placeholders, paths and ports replaced (:func:`page_placeholders`): every one must be
found, so a page that changes them fails here instead of drifting from what is tested. What
the tier adds after them (:func:`tier_settings`) is what one test machine needs beside other
work: its own ports, database and state directory, longer spawn timeouts for a loaded
machine, and ``PYTHONPATH`` for the grading service and the graders' servers (the grading
package is a copy of this checkout there, as in the exchange tier, with its ``ch11-grade``
beside it). The tier's ``/etc/profile.d`` file and group have names of their own, removed after.

Everything listens on 127.0.0.1. :func:`require_hub` skips without root, Chromium or the proxy,
except under CI (``$CI`` set), where it fails.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from support import browser, course_users, tier_gate
from support.course_users import User
from support.page_runner import PageStep, PageStepError
from support.paths import DOCS_DIR
from support.serve_exchange import ServedCourse, wait_for

COURSE_PAGE = DOCS_DIR / "course.md"
#: Debian's node-configurable-http-proxy keeps its modules here; a node that is not Debian's needs it.
NODE_PATH = "/usr/share/nodejs"
#: Seconds the instructor's formgrader server may take to answer on a loaded test machine (the page says 120).
FORMGRADER_TIMEOUT = 180
#: Seconds for the hub to answer after it starts (a few on an idle machine: it waits for no course service).
HUB_START_TIMEOUT = 180.0
#: Seconds the hub may take to stop: its services get SIGINT, then SIGTERM 30 s later, then SIGKILL 30 s later.
HUB_STOP_TIMEOUT = 90.0
#: The page's blocks the tier runs or writes, each by the text that marks it (exactly one block has it).
HUB_BLOCK_MARK = "c.Spawner.cmd"
SERVICES_BLOCK_MARK = "c.JupyterHub.services"
GROUP_BLOCK_MARK = "groupadd"
PROFILE_BLOCK_MARK = "/etc/profile.d/ch11.sh"
BLOCK_MARKS = (GROUP_BLOCK_MARK, PROFILE_BLOCK_MARK, HUB_BLOCK_MARK, SERVICES_BLOCK_MARK)
#: The page's ``ch11-grade doctor`` block ("Checking the deployment"), and where it says the hub's config is.
DOCTOR_BLOCK_MARK = "ch11-grade doctor --course"
PAGE_HUB_CONFIG = "/etc/jupyterhub/jupyterhub_config.py"


def proxy_reason() -> str | None:
    """``None`` when Debian's (or npm's) ``configurable-http-proxy`` runs here, else why not."""
    proxy = shutil.which("configurable-http-proxy")
    if proxy is None:
        return ("no configurable-http-proxy on PATH (apt-get install node-configurable-http-proxy, "
                "or `make hub` as root)")
    done = subprocess.run([proxy, "--version"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NODE_PATH": NODE_PATH})
    if done.returncode != 0:
        return f"configurable-http-proxy --version failed: {done.stderr.strip()[-300:]}"
    return None


def hub_reason() -> str | None:
    """``None`` when the hub tier can run here, else why not."""
    return course_users.exchange_reason() or browser.browser_reason() or proxy_reason() or (
        None if shutil.which("chpasswd") else "no chpasswd on PATH (PAM logins need passwords)")


def require_hub() -> None:
    """Skip without root, Chromium or the proxy, except under CI (``$CI`` set), where the tier must run: fail."""
    tier_gate.require("hub", hub_reason())


# --------------------------------------------------------------------------- the page's config


def page_blocks(page: Path = COURSE_PAGE, marks: tuple[str, ...] = BLOCK_MARKS) -> dict[str, str]:
    """The page's fenced blocks of ``marks`` (``python`` or plain shell), by mark; exactly one each."""
    # Every fence is paired, whatever its language, so that a closing fence never opens a block.
    blocks = [textwrap.dedent(m.group(3)) for m in
              re.finditer(r"^([ \t]*)```([\w-]*)\n(.*?)^\1```$", page.read_text(), re.M | re.S)
              if m.group(2) in ("", "python")]
    found = {}
    for mark in marks:
        having = [b for b in blocks if mark in b]
        assert len(having) == 1, f"{page} has {len(having)} blocks with {mark!r}, not one"
        found[mark] = having[0]
    return found


@dataclass(frozen=True)
class HubPlaces:
    """What this machine's hub has where the page says /opt/ch11, /home, <instructor> ... (see :func:`page_config`)."""

    port: int
    student_venv: Path
    grader_venv: Path
    ch11_grade: Path
    instructor: User
    students: tuple[str, str]
    graders: str
    profile: Path


def page_placeholders(places: HubPlaces) -> dict[str, str]:
    """The page's placeholders, paths and ports, and what the tier puts in their place (in this order: a text
    that holds another comes first). The grading environment's ``bin`` is two folders here: the package copy's
    ``ch11-grade``, then the venv's."""
    grader_bin = f"{places.grader_venv}/bin"
    return {
        "/opt/ch11/grader/bin/ch11-grade": str(places.ch11_grade),
        "/opt/ch11/grader/bin/": f"{grader_bin}/",
        "/opt/ch11/grader/bin": f"{places.ch11_grade.parent}:{grader_bin}",
        "/opt/ch11/students/bin": f"{places.student_venv}/bin",
        "/home/<instructor>": str(places.instructor.home),
        "<instructor>": places.instructor.name,
        "<student1>": places.students[0],
        "<student2>": places.students[1],
        "<graders>": places.graders,
        "/etc/profile.d/ch11.sh": str(places.profile),
        "http://127.0.0.1:8000": f"http://127.0.0.1:{places.port}",
    }


def _substitute(block: str, placeholders: Mapping[str, str]) -> tuple[str, set[str]]:
    used = set()
    for old, new in placeholders.items():
        if old in block:
            used.add(old)
            block = block.replace(old, new)
    return block, used


def page_texts(places: HubPlaces, page: Path = COURSE_PAGE) -> dict[str, str]:
    """The blocks of :func:`page_blocks` with :func:`page_placeholders` put in, by mark; each placeholder must be
    used, and no ``<name>`` may be left."""
    placeholders = page_placeholders(places)
    texts, used = {}, set()
    for mark, block in page_blocks(page).items():
        texts[mark], used_here = _substitute(block, placeholders)
        used |= used_here
        left = re.findall(r"<[a-z][a-z0-9-]*>", texts[mark])
        assert not left, f"the page's block with {mark!r} has placeholders the tier does not fill: {left}"
    unused = set(placeholders) - used
    assert not unused, f"the page's blocks no longer hold {sorted(unused)}: update tests/support/hub.py"
    return texts


def page_config(places: HubPlaces, page: Path = COURSE_PAGE) -> str:
    """The page's hub block and services block (:func:`page_texts`), one after the other."""
    texts = page_texts(places, page)
    return (f"# From {page.name}, the hub's block:\n{texts[HUB_BLOCK_MARK]}\n"
            f"# From {page.name}, the services block:\n{texts[SERVICES_BLOCK_MARK]}")


def tier_settings(state: Path, hub_port: int, proxy_api_port: int, package_copy: Path, graders: str) -> str:
    """What one test machine adds to the page's config (see the module docstring)."""
    return textwrap.dedent(f"""
        # The tier's own: ports, state, timeouts for a loaded machine, the grading package's copy.
        c.JupyterHub.hub_ip = "127.0.0.1"
        c.JupyterHub.hub_port = {hub_port}
        c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
        c.ConfigurableHTTPProxy.pid_file = {str(state / 'proxy.pid')!r}
        c.JupyterHub.db_url = {f'sqlite:///{state / "jupyterhub.sqlite"}'!r}
        c.JupyterHub.cookie_secret_file = {str(state / 'cookie_secret')!r}
        c.JupyterHub.pid_file = {str(state / 'hub.pid')!r}
        c.Spawner.http_timeout = 180
        c.Spawner.start_timeout = 180
        for _service in c.JupyterHub.services:
            _service.setdefault("environment", {{}})["PYTHONPATH"] = {str(package_copy)!r}
        _page_hook = c.Spawner.pre_spawn_hook


        def _tier_hook(spawner):
            _page_hook(spawner)
            import grp
            if spawner.user.name in grp.getgrnam({graders!r}).gr_mem:
                spawner.environment = {{**spawner.environment, "PYTHONPATH": {str(package_copy)!r}}}
            if spawner.name == "formgrader":
                spawner.http_timeout = max(spawner.http_timeout, {FORMGRADER_TIMEOUT})


        c.Spawner.pre_spawn_hook = _tier_hook
        """)


# --------------------------------------------------------------------------- the hub process


@dataclass
class Hub:
    """A JupyterHub process started by :func:`start_hub` (the state directory holds its config, database, log);
    ``process`` is ``script``'s when the hub was started in a terminal."""

    url: str
    state: Path
    process: subprocess.Popen
    tty: bool = False

    @property
    def pid(self) -> int:
        """The hub's own process (under ``script``, its child: read from the hub's pid file)."""
        return int((self.state / "hub.pid").read_text().strip()) if self.tty else self.process.pid

    @property
    def log(self) -> Path:
        return self.state / "hub.log"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def hub_environment(student_venv: Path) -> dict[str, str]:
    """The hub's environment as the page starts it (nothing of the test's: no JUPYTER_*, no PYTHONPATH)."""
    return {"PATH": f"{student_venv}/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "NODE_PATH": NODE_PATH,
            "LANG": "C.UTF-8", "HOME": "/root", "USER": "root"}


def start_hub(url: str, state: Path, student_venv: Path, *, tty: bool = False) -> Hub:
    """``jupyterhub -f jupyterhub_config.py`` as root in ``state``, its output appended to ``state/hub.log``:
    straight into the file (as under a service manager), or with ``tty`` through a terminal of its own
    (``script``, as an admin starting it in a terminal); returns once the hub answers at ``url``."""
    argv = [str(student_venv / "bin" / "jupyterhub"), "-f", "jupyterhub_config.py"]
    (state / "hub.pid").unlink(missing_ok=True)
    with (state / "hub.log").open("ab") as out:
        if tty:
            argv = ["script", "--quiet", "--flush", "--append", "--return", "--command", shlex.join(argv),
                    str(state / "hub.log")]
            out = subprocess.DEVNULL  # type: ignore[assignment]
        process = subprocess.Popen(argv, cwd=state, env=hub_environment(student_venv), stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    hub = Hub(url, state, process, tty)
    deadline = time.monotonic() + HUB_START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/hub/api/", timeout=5):
                return hub
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise RuntimeError(f"the hub did not answer at {url} (exit code {process.poll()}):\n{hub.log_text()[-4000:]}")


def stop_hub(hub: Hub) -> int:
    """SIGINT to the hub (Ctrl-C; it stops its services and servers), and wait for it; its exit status."""
    os.kill(hub.pid, signal.SIGINT)
    try:
        return hub.process.wait(timeout=HUB_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        hub.process.kill()
        hub.process.wait(timeout=30)
        raise AssertionError(f"the hub did not stop within {HUB_STOP_TIMEOUT} s of SIGINT:\n{hub.log_text()[-4000:]}"
                             ) from None


def processes_of(uids: set[int]) -> list[int]:
    """The pids of every process running as one of ``uids`` (real uid)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.stat(f"/proc/{entry}").st_uid in uids:
                found.append(int(entry))
    return found


def end_everything(hub: Hub | None, users: list[User], state: Path) -> None:
    """After the tier, pass or fail: the hub, its proxy, and every process of the tier's users, by pid."""
    if hub is not None and hub.process.poll() is None:
        if hub.tty:  # under script the hub has a session of its own
            with contextlib.suppress(OSError, ValueError):
                os.kill(hub.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hub.process.pid, signal.SIGKILL)
        hub.process.wait(timeout=30)
    proxy_pid = state / "proxy.pid"
    if proxy_pid.is_file():
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.kill(int(proxy_pid.read_text().strip()), signal.SIGKILL)
    uids = {u.uid for u in users}
    for _ in range(3):
        pids = processes_of(uids)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def set_password(user: User, password: str) -> None:
    """What ``passwd <user>`` does for the page: PAM then logs ``user`` in with ``password``."""
    subprocess.run(["chpasswd"], input=f"{user.name}:{password}\n", text=True, check=True, capture_output=True)


def service_pid(user: User, needle: str) -> int | None:
    """The pid of ``user``'s process whose command line holds ``needle`` and whose parent is not (the service
    itself, not its children), or None."""
    for pid in processes_of({user.uid}):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if needle in cmdline and os.stat(f"/proc/{parent}").st_uid != user.uid:
            return pid
    return None


# --------------------------------------------------------------------------- a student in Chromium

#: Run one command in a JupyterLab terminal of the page's user server (jupyter_server_terminals: REST to make
#: the terminal, its websocket for the keystrokes), until a line ``<sentinel> <exit status>``; returns the output.
TERMINAL_JS = """async ([prefix, name, command, sentinel, timeoutMs]) => {
  const xsrf = decodeURIComponent((document.cookie.split('; ').find(c => c.startsWith('_xsrf=')) || '=').split('=')[1]);
  if (!name) {
    const made = await fetch(prefix + 'api/terminals', {method: 'POST', headers: {'X-XSRFToken': xsrf}});
    if (!made.ok) return {name: null, out: 'POST api/terminals: ' + made.status};
    name = (await made.json()).name;
  }
  const ws = new WebSocket(`ws://${location.host}${prefix}terminals/websocket/${name}`);
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject; });
  let out = '';
  ws.onmessage = (e) => { const m = JSON.parse(e.data); if (m[0] === 'stdout') out += m[1]; };
  ws.send(JSON.stringify(['stdin', command + '; echo "' + sentinel + ' $?"\\r']));
  const until = Date.now() + timeoutMs;
  const done = new RegExp(sentinel + ' (\\\\d+)');
  while (!done.test(out) && Date.now() < until) await new Promise(r => setTimeout(r, 100));
  ws.close();
  return {name, out};
}"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class Terminal:
    """One JupyterLab terminal of a user's hub server, driven from that user's logged-in page."""

    page: object
    prefix: str
    name: str | None = None
    calls: int = 0

    def run(self, command: str, timeout: float = 300.0) -> tuple[int, str]:
        """``command`` in the terminal (a login shell); its exit status and output (ANSI escapes removed)."""
        self.calls += 1
        sentinel = f"__ch11_done_{self.calls}__"
        got = self.page.evaluate(TERMINAL_JS, [self.prefix, self.name, command, sentinel, int(timeout * 1000)])
        self.name = got["name"]
        out = ANSI.sub("", got["out"])
        status = re.search(sentinel + r" (\d+)", out)
        assert status, f"the terminal did not finish {command!r} within {timeout} s:\n{out[-3000:]}"
        return int(status.group(1)), out


@dataclass(frozen=True)
class TerminalTarget:
    """Runs the page's steps of ``user`` (``page_runner``'s target) in their JupyterLab :class:`Terminal`, as typed
    there: each step's script through ``bash -euo pipefail`` started from the terminal's shell, so it has the
    terminal's environment (its PATH), from the user's home."""

    terminal: Terminal
    user: str
    timeout: float = 900.0

    def run(self, step: PageStep) -> subprocess.CompletedProcess[str]:
        if step.user != self.user:
            raise PageStepError(step.name, step.line, f"runs as {step.user}, and this terminal is {self.user}'s")
        encoded = base64.b64encode(step.script.encode()).decode()
        status, out = self.terminal.run(f"cd && echo {encoded} | base64 -d | bash -euo pipefail", self.timeout)
        return subprocess.CompletedProcess(step.name, status, out)


def log_in(page: object, hub_url: str, user: User, password: str, then: str) -> None:
    """The hub's login form as a person fills it, then wait for ``then`` (a URL glob) to load."""
    page.goto(f"{hub_url}/hub/login")
    page.fill("#username_input", user.name)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(then, timeout=240_000)


NBGRADER_MENU = '#jp-menu-panel div.lm-MenuBar-itemLabel:text("Nbgrader")'
#: Seconds for one JupyterLab page step (a click's answer) on a loaded machine.
STEP_MS = 120_000


def wait_for_lab(page) -> None:
    """Until JupyterLab has loaded (its Nbgrader menu is there: nbgrader's lab extension too)."""
    page.locator(NBGRADER_MENU).wait_for(timeout=STEP_MS)


def assignments_tab(page) -> None:
    """Nbgrader > Assignments in the user's JupyterLab, once its released list is there."""
    wait_for_lab(page)
    page.locator(NBGRADER_MENU).click()
    page.locator('#jp-mainmenu-nbgrader li[data-command="nbgrader:open-assignment-list"]').click()
    page.locator("#released_assignments_list").wait_for(timeout=STEP_MS)


def list_rows(page, name: str, count: int):
    """The rows of the Assignments tab's ``name`` list (released, fetched, submitted), once there are ``count``."""
    rows = page.locator(f"#{name}_assignments_list > .list_item")
    deadline = time.monotonic() + STEP_MS / 1000
    while rows.count() != count:
        assert time.monotonic() < deadline, f"the {name} list never had {count} rows: {page.inner_text('body')[-2000:]}"
        time.sleep(0.2)
    return rows


# --------------------------------------------------------------------------- a served course behind the hub


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class HubCourse(ServedCourse):
    """A course of ``serve_exchange.served_course`` behind a hub: the hub's state is ``<root>/hub``."""

    hub: Hub | None = None
    hub_url: str = ""
    passwords: dict[str, str] = field(default_factory=dict)
    graders: str = ""
    profile: Path | None = None

    @property
    def state(self) -> Path:
        return self.root / "hub"

    @property
    def log(self) -> Path:  # the services' output is the hub's
        return self.state / "hub.log"

    @property
    def hub_config(self) -> Path:
        """The hub's config where the instructor can read it, as the page's ``/etc/jupyterhub`` (the state directory,
        which holds the hub's database and cookie secret, stays root's; it links to this file)."""
        return self.root / "etc-jupyterhub" / "jupyterhub_config.py"

    def user_prefix(self, role: str) -> str:
        return f"/user/{self.students[role].name}/"


def ch11_grade_launcher(course: ServedCourse) -> Path:
    """``ch11-grade`` as pip's console script would be, for the grader venv with the package copy on PYTHONPATH."""
    script = course.root / "bin" / "ch11-grade"
    script.parent.mkdir(mode=0o755)
    script.write_text(f"#!{course.grader_venv}/bin/python\nimport sys\nfrom ch11_autograder.cli import main\n"
                      "sys.exit(main())\n")
    script.chmod(0o755)
    return script


def run_page_block(text: str, what: str) -> None:
    """One of the page's shell blocks (placeholders put in), as root with ``bash -e``."""
    done = subprocess.run(["bash", "-e", "-c", text], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the page's {what} block failed (exit {done.returncode}):\n{text}\n{done.stderr}"


def prepare_hub(course: HubCourse) -> None:
    """The page's steps for the course's users and the hub's config: passwords, the graders' group (step 5), the
    ``/etc/profile.d`` file (step 6), ``jupyterhub_config.py`` (step 9)."""
    course.state.mkdir(mode=0o700)
    for role, user in [("instructor", course.instructor), *course.students.items()]:
        course.passwords[role] = secrets.token_urlsafe(12)
        set_password(user, course.passwords[role])
    port = free_port()
    course.graders = f"{course.instructor.name}g"
    course.profile = Path(f"/etc/profile.d/{course.instructor.name}-ch11.sh")
    students = tuple(u.name for u in course.students.values())
    assert len(students) == 2, "the page's allowed_users names two students"
    places = HubPlaces(port=port, student_venv=course.student_venv, grader_venv=course.grader_venv,
                       ch11_grade=ch11_grade_launcher(course), instructor=course.instructor,
                       students=(students[0], students[1]), graders=course.graders, profile=course.profile)
    texts = page_texts(places)
    run_page_block(texts[GROUP_BLOCK_MARK], "graders' group")
    run_page_block(texts[PROFILE_BLOCK_MARK], "/etc/profile.d")
    text = page_config(places) + tier_settings(course.state, free_port(), free_port(), course.root / "lib",
                                               course.graders)
    course.hub_config.parent.mkdir(mode=0o755)
    course.hub_config.write_text(text)
    course.hub_config.chmod(0o644)
    (course.state / "jupyterhub_config.py").symlink_to(course.hub_config)
    course.hub_url = f"http://127.0.0.1:{port}"


def serving_lines(course: HubCourse) -> int:
    """How many times the grading service has said it serves (once per start)."""
    if not course.log.is_file():
        return 0
    return sum("  serving  " in line for line in course.log.read_text(errors="replace").splitlines())


def start_served_hub(course: HubCourse, *, tty: bool = False, serving: bool = True) -> None:
    """Start the hub of :func:`prepare_hub` (``tty``: in a terminal); with ``serving``, return once its
    ``ch11-serve`` service serves."""
    before = serving_lines(course)
    course.hub = start_hub(course.hub_url, course.state, course.student_venv, tty=tty)
    if serving:
        wait_for(lambda: serving_lines(course) > before, "the ch11-serve service's serving line", course, poll=0.2)


def end_hub(course: HubCourse, keep_log: Path | None = None) -> None:
    """:func:`end_everything` for the course's hub and users; the hub's log copied to ``keep_log`` first."""
    end_everything(course.hub, [course.instructor, *course.students.values()], course.state)
    if course.profile is not None:
        course.profile.unlink(missing_ok=True)
    if course.graders:
        subprocess.run(["groupdel", course.graders], capture_output=True, text=True)
    if keep_log is not None and course.log.is_file():
        keep_log.parent.mkdir(parents=True, exist_ok=True)
        keep_log.write_bytes(course.log.read_bytes())


def instructor_terminal(course: HubCourse, context) -> tuple[object, Terminal]:
    """The instructor logged in to the hub, at their JupyterLab, with a terminal of it (REST and websocket)."""
    page = context.new_page()
    user = course.instructor
    log_in(page, course.hub_url, user, course.passwords["instructor"], f"{course.hub_url}/user/{user.name}/lab**")
    wait_for_lab(page)
    return page, Terminal(page, f"/user/{user.name}/")


def open_formgrader(course: HubCourse, page, timeout_ms: int = 360_000) -> None:
    """The instructor's ``formgrader`` server (the page's step 9), as they start it from the hub."""
    name = course.instructor.name
    page.goto(f"{course.hub_url}/hub/spawn/{name}/formgrader", timeout=STEP_MS)
    page.wait_for_url(f"{course.hub_url}/user/{name}/formgrader/formgrader**", timeout=timeout_ms)


def assert_grading_environment_first(course: HubCourse, out: str) -> None:
    """``command -v nbgrader; command -v ch11-grade`` in the instructor's terminal answered the grading
    environment's (the package copy's ``ch11-grade``, as the tier places it)."""
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("/")]
    assert lines[-2:] == [f"{course.grader_venv}/bin/nbgrader", str(course.root / "bin" / "ch11-grade")], out


# --------------------------------------------------------------------------- ch11-grade doctor, as the page runs it


@dataclass(frozen=True)
class Doctor:
    """What one ``ch11-grade doctor`` run printed: its exit status, its lines (``problem: ...`` or ``all checks
    passed ...``) and its whole output."""

    status: int
    lines: tuple[str, ...]
    text: str

    @property
    def problems(self) -> list[str]:
        return [line for line in self.lines if line.startswith("problem: ")]


def doctor_command(course: HubCourse, page: Path = COURSE_PAGE) -> str:
    """The page's ``ch11-grade doctor`` block with the tier's hub config for the page's ``/etc/jupyterhub`` one."""
    block = page_blocks(page, (DOCTOR_BLOCK_MARK,))[DOCTOR_BLOCK_MARK].strip()
    assert PAGE_HUB_CONFIG in block and "\n" not in block, f"the page's doctor block changed: {block!r}"
    return block.replace(PAGE_HUB_CONFIG, str(course.hub_config))


def start_doctor(course: HubCourse, terminal: Terminal, name: str, prefix: str = "") -> Path:
    """Start the page's ``ch11-grade doctor`` in the instructor's ``terminal`` (in the background: the steps go on),
    its output and then ``exit <status>`` to ``~/doctor-<name>.txt``; that file. ``prefix`` goes before the command
    (a variable for its own process)."""
    out = course.instructor.home / f"doctor-{name}.txt"
    out.unlink(missing_ok=True)
    command = f"({prefix}{doctor_command(course)} > ~/{out.name}.part 2>&1; echo \"exit $?\" >> ~/{out.name}.part; " \
              f"mv ~/{out.name}.part ~/{out.name}) & true"
    status, said = terminal.run(command)
    assert status == 0, said
    return out


def doctor_result(course: HubCourse, out: Path, timeout: float = 600.0) -> Doctor:
    """The run of :func:`start_doctor` writing ``out``, once it has finished."""
    wait_for(out.is_file, f"ch11-grade doctor ({out.name})", course, timeout=timeout)
    text = out.read_text(errors="replace")
    status = re.search(r"^exit (\d+)$", text, re.M)
    assert status, text
    lines = tuple(line for line in text.splitlines() if line.startswith(("problem: ", "all checks passed")))
    return Doctor(int(status.group(1)), lines, text)


def run_doctor(course: HubCourse, terminal: Terminal, name: str, prefix: str = "") -> Doctor:
    """:func:`start_doctor`, then :func:`doctor_result`."""
    return doctor_result(course, start_doctor(course, terminal, name, prefix))
