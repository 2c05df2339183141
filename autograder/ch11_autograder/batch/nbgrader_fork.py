"""One pre-imported nbgrader per worker slot; each submission's ``nbgrader autograde`` is a fork of it.

A batch runs ``nbgrader autograde`` once per submission (:func:`.isolated.grade_isolated`),
and every such process first starts Python and imports nbgrader, nbconvert, SQLAlchemy,
the course's ``nbgrader_config.py`` and through it the grading engine and its suites.
:class:`NbgraderForkServer` starts one process per slot that does exactly that once
(``python -P -m ch11_autograder.batch.nbgrader_fork CONFIG``: it loads the course config
as nbgrader does, so what it imports is what the config names), then forks a child per
request. The child is what the separate process was:

* the signal dispositions, blocked signals and umask the server had at its start, which
  are those of the fresh interpreter it replaces (``untrusted/runtime/fresh.py``: SIGPIPE
  ignored, so a write to a dead pipe raises BrokenPipeError, as in any Python process);
* its own process group (``pid`` is the group's id, so the caller kills it as before),
  working directory, environment (replaced whole), ``argv`` and log (stdout and stderr,
  passed as a descriptor); stdin is ``/dev/null``;
* it runs nbgrader's own ``main`` from the state the imports left, then exits with its
  status; it dies with the server (``PR_SET_PDEATHSIG``), and the server with the thread
  that started it.

The server also imports the suite modules the config names and fills nbformat's and
SQLAlchemy's first-use caches (:func:`_preload`), which each run would otherwise do itself.

Nothing flows back into the server: it never runs nbgrader, never reads what a child wrote,
and a child's changes to module state die with the child. Student code runs in neither: it
runs in the sandbox the child starts. So per-submission isolation is that of separate
processes, as before.

Wire (the socket is the server's stdin): ``frames.py`` of the zygote. Requests
``{"op": "run", "id": N, "argv": [...], "cwd": path, "env": {...}}`` with the log
descriptor on the header; answers ``{"op": "ready"}`` once, ``{"op": "started", "id": N,
"pid": P}`` or ``{"op": "failed", "id": N, "message": m}``, and ``{"op": "exited", "id": N,
"status": code or -signal}``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..nbgrader_cli import nbgrader_argv, nbgrader_env
from ..untrusted.forkclient import ForkClient
from ..untrusted.runtime import children, frames, fresh

__all__ = ["ForkServerGone", "ForkedNbgrader", "NbgraderForkServer", "SlotServers", "die_with_parent",
           "start_nbgrader"]

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


class ForkServerGone(RuntimeError):
    """The fork server did not start, refused, or has ended; start the run as a process instead."""


@dataclass(eq=False)  # identity: the batch keeps runs in flight in a set
class ForkedNbgrader:
    """One forked ``nbgrader`` run, with the parts of :class:`subprocess.Popen` the batch uses.

    ``pid`` is the child's process id and process group id (host pid namespace); ``returncode``
    follows Popen: the exit status, or ``-N`` after signal N (``-9`` when the server ended
    while the run was in flight: the child dies with it).
    """

    run_id: int
    pid: int = 0
    returncode: int | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(f"forked nbgrader {self.run_id}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def _finish(self, returncode: int) -> None:
        self.returncode = returncode
        self._done.set()


class NbgraderForkServer:
    """A process that has imported nbgrader and the course config, forking one nbgrader run per request.

    Args:
        config: the course's ``nbgrader_config.py`` (each isolated course holds a copy of it);
            the server loads it once so its imports are done before any fork.
        start_timeout: seconds the server has to import and say it is ready.
        wait: wait for the server to be ready here; ``False``: return once it is started (it
            imports while the caller goes on) and wait at the first :meth:`spawn`.

    Raises:
        ForkServerGone: the server could not start (its stderr is in the message); with
            ``wait=False``, only if it could not be started at all.
    """

    def __init__(self, config: Path, *, start_timeout: float = 120.0, wait: bool = True) -> None:
        self.start_timeout = start_timeout
        self._ready = threading.Lock()
        self._checked = False
        self.client: ForkClient[ForkedNbgrader] = ForkClient("the nbgrader fork server", ForkServerGone,
                                                             ForkedNbgrader._finish)
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, str(config)], stdin=self.client.theirs.fileno(),
                stdout=subprocess.DEVNULL, stderr=self.stderr, cwd=str(config.parent), env=nbgrader_env(),
                start_new_session=True, preexec_fn=die_with_parent,
            )
        except OSError as exc:
            self.client.close()
            raise ForkServerGone(f"the nbgrader fork server could not be started: {exc}") from exc
        finally:
            self.client.theirs.close()
        self.client.start_reading("ch11-nbgrader-fork")
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait (once) for the server's ``ready``; a refusal, silence or :meth:`close` meanwhile ends it and raises
        ForkServerGone."""
        with self._ready:
            if self._checked:
                return
            hello = self.client.wait_ready(self.start_timeout) or {
                "op": "refused", "message": f"not ready within {self.start_timeout:g} s"}
            if hello.get("op") != "ready":
                self.close()
                raise ForkServerGone(f"the nbgrader fork server refused to serve: {hello.get('message')} "
                                     f"{self.diagnostics()}")
            self._checked = True

    def diagnostics(self) -> str:
        """The server's stderr, last 1000 characters."""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            text = self.stderr.read().decode(errors="replace").strip()
            return f"(stderr: {text[-1000:]})" if text else ""
        return ""

    @property
    def alive(self) -> bool:
        return not self.client.dead and self.proc.poll() is None

    def spawn(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log_fd: int) -> ForkedNbgrader:
        """Fork ``nbgrader *argv`` in ``cwd`` with exactly ``env``, stdout and stderr to ``log_fd``.

        Raises:
            ForkServerGone: the server has ended, never got ready, or could not fork (nothing was started).
        """
        self.wait_ready()
        header = {"op": "run", "argv": [str(a) for a in argv], "cwd": str(cwd),
                  "env": {str(k): str(v) for k, v in env.items()}}
        run, answer = self.client.request(header, ForkedNbgrader, fds=[log_fd])
        run.pid = int(answer["pid"])
        return run

    def close(self) -> None:
        """End the server (its runs in flight die with it) and wait for it; a second call does nothing
        (the process group is not signalled again: its id may have been reused)."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        self.client.close()
        if hasattr(self, "proc"):
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        self.stderr.close()


class SlotServers:
    """One :class:`NbgraderForkServer` per grading slot, for the local pool and for a Dask worker.

    :meth:`for_slot` starts a slot's server on first use and again after it ended (a crash
    costs one start, not the batch). A server that cannot start is logged once and the slot
    gets ``None`` from then on: its submissions start nbgrader as a process of their own, as
    with ``enabled=False``. Thread-safe: two threads asking for one slot at once get one
    server (a lock per slot), and different slots start in parallel.

    Args:
        config: the course's ``nbgrader_config.py`` the servers preload.
        enabled: ``False`` hands out no server at all.
    """

    def __init__(self, config: Path, *, enabled: bool = True) -> None:
        self.config = config
        self.enabled = enabled
        self._lock = threading.Lock()
        self._servers: dict[int, NbgraderForkServer | None] = {}
        self._slot_locks: dict[int, threading.Lock] = {}
        self._borrowed: set[int] = set()  # id()s of adopted servers their caller closes
        # Servers still importing: close() ends them too, so that a pool cancelled while a slot warms does not
        # wait for that server's imports (its for_slot caller gets None at once).
        self._starting: set[NbgraderForkServer] = set()
        self._generation = 0  # close() counts up: a start it interrupted is not kept for later calls
        self._final = False  # close(final=True): no server starts any more
        #: How many servers have been started so far (one per slot, plus one per restart after a server ended).
        self.started = 0

    def for_slot(self, slot: int) -> NbgraderForkServer | None:
        """The slot's serving fork server, or ``None`` when nbgrader must start as a process.

        Two threads asking for the same slot at once (the pool warming it while its first
        submission starts) get the same server: the second waits for the first's start.
        """
        if not self.enabled:
            return None
        with self._lock:
            slot_lock = self._slot_locks.setdefault(slot, threading.Lock())
        with slot_lock:
            with self._lock:
                if self._final or (slot in self._servers and self._servers[slot] is None):
                    return None
                server = self._servers.get(slot)
            if server is not None and server.alive:
                return server
            if server is not None:
                server.close()
            with self._lock:
                generation = self._generation
            try:
                server = NbgraderForkServer(self.config, wait=False)
                with self._lock:
                    self._starting.add(server)
                try:
                    server.wait_ready()
                finally:
                    with self._lock:
                        self._starting.discard(server)
            except ForkServerGone as exc:
                with self._lock:
                    if generation != self._generation:  # closed while it started: no fallback to remember
                        return None
                log.warning("grading slot %d starts nbgrader afresh for each submission: %s", slot, exc)
                server = None
            with self._lock:
                if generation != self._generation:
                    closed = server
                    server = None
                else:
                    closed = None
                    self._servers[slot] = server
                    self.started += server is not None
            if closed is not None:
                closed.close()
            return server

    def adopt(self, slot: int, server: NbgraderForkServer, *, owned: bool = True) -> None:
        """Use ``server`` (started earlier for this course's config, e.g. while the batch command was
        still importing) as ``slot``'s. ``owned``: it is closed with the others; otherwise its caller
        closes it (and may go on forking from it after :meth:`close`). A slot that has one already
        keeps it, and an owned ``server`` is closed (as with ``enabled=False``)."""
        with self._lock:
            unused = not self.enabled or slot in self._servers
            if not unused:
                self._servers[slot] = server
                self.started += 1
                if not owned:
                    self._borrowed.add(id(server))
        if unused and owned:
            server.close()

    def close_starting(self) -> None:
        """End the servers still importing (none has a run yet): their :meth:`for_slot` callers get ``None`` at once
        (and later calls for those slots start nbgrader afresh) instead of waiting for the imports to finish."""
        with self._lock:
            starting = list(self._starting)
            self._starting.clear()
        for server in starting:
            server.close()

    def close(self, *, final: bool = False) -> None:
        """End every server this object owns, those still starting too (runs in flight die with them); later calls
        start new ones, unless ``final`` (a cancelled pool, a stopped worker): then every later call gets ``None``,
        so a thread that was about to start a submission cannot start a server after the last close."""
        with self._lock:
            self._final = self._final or final
            servers = [s for s in self._servers.values() if s is not None and id(s) not in self._borrowed]
            servers += self._starting
            self._servers.clear()
            self._borrowed.clear()
            self._starting.clear()
            self._generation += 1
        for server in servers:
            server.close()


def start_nbgrader(args: Sequence[str], cwd: Path, env: Mapping[str, str], log: IO[bytes],
                   forks: NbgraderForkServer | None, *, whose: str = "the slot's") -> subprocess.Popen | ForkedNbgrader:
    """``nbgrader *args`` in ``cwd``: a fork of ``forks`` when it serves, else a process of its own.

    Both are their own process group and end with this thread; a server that is gone is noted
    in ``log`` (``whose`` names it there) before nbgrader starts afresh.
    """
    if forks is not None:
        try:
            return forks.spawn(args, cwd=cwd, env=env, log_fd=log.fileno())
        except ForkServerGone as exc:
            log.write(f"[ch11] {whose} nbgrader fork server is gone ({exc}); starting nbgrader afresh\n".encode())
            log.flush()
    return subprocess.Popen(nbgrader_argv(*args), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)


def die_with_parent() -> None:
    """Have the calling process get SIGKILL when the thread that started it ends (``PR_SET_PDEATHSIG``)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# ---------------------------------------------------------------------------- server side


#: Where the course config names its hidden suite modules (``trusted/steps/trusted_verdicts.py``), read as a
#: setting: the batch never imports the grading engine, the config it loads does.
SUITE_MODULES_SETTING = ("TrustedVerdicts", "suite_modules")


def _preload(config: Path) -> None:
    """Import what every ``nbgrader autograde`` of this course imports, and fill its first-use caches.

    What each run would otherwise do at its own first use, once per submission, is done here
    once per server; none of it reads a course's files beyond the config, or runs anything:

    * nbgrader's apps and the course config, which imports the grading engine and its steps;
    * the suite modules the config names (``TrustedVerdicts.suite_modules``, dotted names; a
      ``.py`` path is loaded by the engine under a name of its own, at first use), which the
      engine imports at the first notebook with test cells: 0.2-0.3 s of each run's start;
    * nbformat's compiled schema validators (strict and relaxed, the current minor version),
      and SQLAlchemy's mapper configuration for nbgrader's gradebook: both built at first
      use and kept for the process, about 0.05 s each.
    """
    import importlib

    from traitlets.config.loader import PyFileConfigLoader

    from ..nbgrader_main import skip_costly_imports

    skip_costly_imports()
    import nbformat
    import nbgrader.apps.nbgraderapp  # every subcommand's app
    import nbgrader.converters.autograde  # noqa: F401
    from nbformat.validator import get_validator
    from sqlalchemy.orm import configure_mappers

    loaded = PyFileConfigLoader(config.name, path=str(config.parent)).load_config()
    section, name = SUITE_MODULES_SETTING
    modules = loaded.get(section, {}).get(name, [])
    # A list set outright; one the config only extends (``.append``: traitlets' LazyConfigValue) is
    # resolved against the trait's default by nbgrader, which the batch cannot see: left to each run.
    for module in modules if isinstance(modules, (list, tuple)) else []:
        if isinstance(module, str) and not (module.endswith(".py") or "/" in module):
            importlib.import_module(module)
    for relaxed in (False, True):
        get_validator(version=4, version_minor=nbformat.current_nbformat_minor, relax_add_props=relaxed)
    configure_mappers()


def _child(request: dict[str, Any], log_fd: int, server_pid: int, at_start: fresh.FreshState) -> int:
    """In the forked child: become the nbgrader process the request describes; returns its exit status."""
    die_with_parent()
    if os.getppid() != server_pid:  # the server died before the line above
        return 1
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # As the fresh nbgrader would start: SIGPIPE ignored among the rest, so that a write to the
    # pipe of a runner a submission killed raises BrokenPipeError instead of killing nbgrader.
    fresh.restore(at_start)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, 1 << 16)  # the server's socket and wake-up pipe are not nbgrader's
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
    tempfile.tempdir = None  # gettempdir() caches $TMPDIR; each run has its own
    sys.argv = ["nbgrader", *[str(a) for a in request["argv"]]]
    from ..nbgrader_main import main

    try:
        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return int(code or 0)


def _serve(sock: socket.socket, at_start: fresh.FreshState) -> None:
    """Fork a child per run request until the batch closes the socket, and say when each ends (``children.serve``)."""
    server_pid = os.getpid()
    runs: dict[int, int] = {}  # pid -> request id

    def answer() -> bool:
        raw_len, fds, _, _ = socket.recv_fds(sock, frames.LENGTH_BYTES, 1)
        if not raw_len:
            return False
        request = frames.read_header(sock, raw_len)
        run_id = request.get("id")
        try:
            if request.get("op") != "run" or len(fds) != 1 or not isinstance(run_id, int):
                raise ValueError("expected a run request with an id and one log descriptor")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    code = _child(request, fds[0], server_pid, at_start)
                except BaseException:
                    import traceback

                    with contextlib.suppress(BaseException):
                        traceback.print_exc()
                finally:
                    _exit(code)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # before answering: the caller may kill the group at once
            runs[pid] = run_id
            sock.sendall(frames.pack({"op": "started", "id": run_id, "pid": pid}))
        except Exception as exc:
            sock.sendall(frames.pack({"op": "failed", "id": run_id, "message": f"{type(exc).__name__}: {exc}"}))
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def ended(pid: int, code: int) -> None:
        if pid in runs:
            sock.sendall(frames.pack({"op": "exited", "id": runs.pop(pid), "status": code}))

    children.serve(sock, answer, ended)


def _exit(code: int) -> None:
    """End a forked child as an interpreter would (exit handlers, flushed streams), never returning."""
    import atexit

    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code & 0xFF)


def main(argv: Sequence[str] | None = None) -> int:
    """Server entry point: ``python -P -m ch11_autograder.batch.nbgrader_fork CONFIG``, stdin a unix socket."""
    at_start = fresh.capture()  # before the imports: what every fork is given back
    args = list(sys.argv[1:] if argv is None else argv)
    sock = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    try:
        _preload(Path(args[0]).resolve())
    except BaseException as exc:
        sock.sendall(frames.pack({"op": "refused", "message": f"the imports failed: {type(exc).__name__}: {exc}"}))
        raise
    if threading.active_count() != 1:  # a fork would copy locks other threads hold
        sock.sendall(frames.pack({"op": "refused", "message": f"{threading.active_count()} threads after the imports"}))
        return 3
    # As in the zygote: what the imports made lives as long as a fork, so its collections need not walk it.
    gc.collect()
    gc.freeze()
    sock.sendall(frames.pack({"op": "ready", "pid": os.getpid()}))
    _serve(sock, at_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
