"""Every run of one submission as a fork of that submission's zygote, inside its sandbox.

:class:`ForkServerLauncher` is a :class:`~.launch.Launcher` wrapped around a backend's
launcher. On its first ``spawn`` it starts ``runtime/zygote.py`` through the backend (one
sandbox, one cgroup), which imports numpy, matplotlib, nbclient and ipykernel once; every
run after that (a notebook's runner, which forks its kernel, or a verdict worker) is a
fork of that process, told what to run over a unix socket. Interpreter starts and imports,
about 1 CPU-s per process, are paid once per submission instead of three times per
notebook (bench/README.md, "Interpreter starts").

What stays as with the backend alone:

* **Nothing crosses submissions.** One zygote serves one submission: :meth:`for_submission`
  ends the zygote when the submission changes, and the backend gives it a sandbox of its
  own. A zygote never runs student code, so a fork starts from the same state every time.
* **Nothing crosses runs of a submission** that a fresh interpreter would not show: after a
  run ends the zygote kills every process it left behind, removes its directory and puts
  the ``wipe`` directories (the sandbox's private ``/tmp`` and ``/dev/shm``) back as they
  were before the first run.
* **Limits.** Each run gets RLIMIT_CPU and RLIMIT_FSIZE of its own; its wall time is the
  caller's to enforce, and :meth:`ForkedRun.kill_tree` kills the run's process group through
  the zygote, or the whole sandbox when the zygote does not confirm within
  ``kill_confirm_seconds``. Memory and processes are bounded by the sandbox's cgroup,
  which the runs of one submission now share.
* **Files.** A run's directory starts with a copy of the caller's ``scratch`` (its regular
  files), sent over the socket; when the run ends, its ``writeback`` files come back the
  same way and are written into ``scratch``, nothing else does.

When the zygote cannot start or dies, the launcher says so on its log and runs the scripts
through the backend directly, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from .forkclient import ForkClient, exit_status
from .launch import Launcher, Limits, scratch_seed
from .runtime import frames

__all__ = ["ForkServerLauncher", "ForkedRun", "ZygoteUnavailable"]

log = logging.getLogger(__name__)

#: Set in every run's environment: ``execute_notebook.py`` then forks its kernel.
FORK_KERNEL_ENV = "CH11_FORK_KERNEL"


class ZygoteUnavailable(RuntimeError):
    """The zygote did not start, refused to serve, or stopped answering."""


@dataclass
class ForkedRun:
    """A run forked by a zygote, with the parts of :class:`subprocess.Popen` the grader uses.

    ``pid`` is ``None``: the process lives in the sandbox's pid namespace, and no host
    process group may be signalled in its name; :meth:`kill_tree` is the way to end it.
    ``returncode`` follows Popen: the exit status, or ``-N`` after signal N.
    ``limit_events`` holds the sandbox cgroup's counters taken when the run ended, with
    ``oom_kill`` and ``pids_max_hits`` counted from the run's start.
    """

    run_id: int
    server: _Zygote
    scratch: Path
    writeback: tuple[str, ...]
    stdin: IO[bytes] | None = None
    stdout: IO[bytes] | None = None
    stderr: IO[bytes] | None = None
    returncode: int | None = None
    limit_events: dict[str, int] = field(default_factory=dict)
    pid: None = None
    _done: threading.Event = field(default_factory=threading.Event)
    _events_at_start: dict[str, int] = field(default_factory=dict)

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(f"zygote run {self.run_id}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill_tree(self) -> None:
        """SIGKILL the run's process group; the whole sandbox when the zygote does not confirm."""
        if self._done.is_set():
            return
        self.server.kill(self.run_id)
        if not self._done.wait(self.server.kill_confirm_seconds):
            log.warning("zygote did not confirm the end of run %d: ending the submission's sandbox", self.run_id)
            self.server.abandon()
            self._done.wait(self.server.kill_confirm_seconds)

    kill = kill_tree

    def terminate(self) -> None:
        self.kill_tree()

    def send_signal(self, signum: int) -> None:
        self.kill_tree()

    def _finish(self, returncode: int, events: dict[str, int]) -> None:
        for key in ("oom_kill", "pids_max_hits"):
            if key in events:
                events[key] -= self._events_at_start.get(key, 0)
        self.limit_events = events
        self.returncode = returncode
        self._done.set()


class _Zygote:
    """One running zygote: its sandbox process, its socket and the runs it has forked."""

    def __init__(self, inner: Launcher, limits: Limits, wipe: Sequence[str], start_timeout: float,
                 kill_confirm_seconds: float, runs: str = "all") -> None:
        self.kill_confirm_seconds = kill_confirm_seconds
        self.client: ForkClient[ForkedRun] = ForkClient("the zygote", ZygoteUnavailable, self._finish,
                                                        exited=self._exited)
        self.scratch = Path(tempfile.mkdtemp(prefix="ch11-zygote-"))
        (self.scratch / "zygote.json").write_text(json.dumps({"wipe": list(wipe), "runs": runs}), encoding="utf-8")
        self.stderr = tempfile.TemporaryFile()
        theirs = self.client.theirs
        started: queue.Queue[Any] = queue.Queue()

        def hold() -> None:
            # bwrap's --die-with-parent fires when the thread that started it ends: this one
            # lives as long as the zygote.
            try:
                proc = inner.spawn("zygote.py", [], scratch=self.scratch, limits=limits,
                                   env={FORK_KERNEL_ENV: "1"}, stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                                   stderr=self.stderr)
            except BaseException as exc:
                started.put(exc)
                return
            finally:
                theirs.close()
            started.put(proc)
            proc.wait()

        self.holder = threading.Thread(target=hold, name="ch11-zygote", daemon=True)
        self.holder.start()
        got = started.get(timeout=start_timeout)
        if isinstance(got, BaseException):
            self._cleanup()
            raise ZygoteUnavailable(f"the zygote could not be started: {got}") from got
        self.proc: Any = got
        self.client.start_reading("ch11-zygote-reader")
        hello = self.client.wait_ready(start_timeout)
        if hello is None:
            self.abandon()
            raise ZygoteUnavailable(f"the zygote did not get ready within {start_timeout:g} s: "
                                    f"{self.diagnostics()}")
        if hello.get("op") != "ready":
            self.abandon()
            raise ZygoteUnavailable(f"the zygote refused to serve: {hello.get('message', hello)} "
                                    f"{self.diagnostics()}")

    @property
    def dead(self) -> bool:
        return self.client.dead

    # ------------------------------------------------------------------ reading

    def _finish(self, run: ForkedRun, status: int) -> None:
        run._finish(status, self._events())

    def _exited(self, message: dict[str, Any]) -> None:
        """A run ended: its writeback files follow the message (read them even for a run no longer in flight)."""
        run = self.client.take(int(message["id"]))
        listed = message.get("writeback") or []
        for rel, size in listed:
            data = frames.read_exact(self.client.sock, int(size)) if size is not None else None
            if run is not None and data is not None and rel in run.writeback:
                (run.scratch / rel).write_bytes(data)
        if run is not None:
            self._finish(run, exit_status(message))

    def _events(self) -> dict[str, int]:
        cgroup = getattr(self.proc, "run_cgroup", None)
        if cgroup is None:
            return {}
        with contextlib.suppress(OSError):
            return dict(cgroup.events())
        return {}

    # ------------------------------------------------------------------ requests

    def spawn(self, script: str, args: Sequence[str], *, scratch: Path, limits: Limits,
              env: Mapping[str, str] | None, stdin: Any, stdout: Any, stderr: Any,
              writeback: Sequence[str]) -> ForkedRun:
        files: list[tuple[str, bytes]] = []
        seed = scratch_seed(scratch, skip=writeback)
        try:
            for rel, fd in seed:
                if fd is not None:
                    with os.fdopen(fd, "rb", closefd=False) as handle:
                        files.append((rel, handle.read()))
        finally:
            for _, fd in seed:
                if fd is not None:
                    os.close(fd)
        for rel in writeback:
            (scratch / rel).touch()
        ours: list[IO[bytes] | None] = [None, None, None]
        theirs: list[int] = []
        close_after: list[int] = []
        try:
            for index, spec in enumerate((stdin, stdout, stderr)):
                if spec == subprocess.PIPE:
                    read_end, write_end = os.pipe()
                    if index == 0:
                        ours[0] = os.fdopen(write_end, "wb", buffering=0)
                        theirs.append(read_end)
                    else:
                        ours[index] = os.fdopen(read_end, "rb", buffering=0)
                        theirs.append(write_end)
                    close_after.append(theirs[-1])
                elif spec == subprocess.DEVNULL or (spec is None and index == 0):
                    fd = os.open(os.devnull, os.O_RDWR)
                    theirs.append(fd)
                    close_after.append(fd)
                elif spec is None:
                    theirs.append(index)
                elif isinstance(spec, int):
                    theirs.append(spec)
                else:
                    theirs.append(spec.fileno())
            header = {
                "op": "spawn", "script": script, "args": list(args), "env": dict(env or {}),
                "cpu_seconds": limits.cpu_seconds, "max_file_bytes": limits.max_file_bytes,
                "files": [[rel, len(data)] for rel, data in files], "writeback": list(writeback),
            }

            def new_run(run_id: int) -> ForkedRun:
                return ForkedRun(run_id, self, scratch, tuple(writeback), ours[0], ours[1], ours[2],
                                 _events_at_start=self._events())

            run, _ = self.client.request(header, new_run, fds=theirs, payloads=[data for _, data in files])
            return run
        except BaseException:
            for stream in ours:
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            raise
        finally:
            for fd in close_after:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def kill(self, run_id: int) -> None:
        self.client.send({"op": "kill", "id": run_id})

    def abandon(self) -> None:
        """End the zygote's sandbox at once (every run in it dies)."""
        self.client.dead = True
        kill_tree = getattr(self.proc, "kill_tree", None) if hasattr(self, "proc") else None
        if callable(kill_tree):
            kill_tree()
        elif hasattr(self, "proc"):
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.client.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.abandon()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        self._cleanup()

    def _cleanup(self) -> None:
        self.client.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def diagnostics(self) -> str:
        with contextlib.suppress(OSError):
            self.stderr.seek(0)
            text = self.stderr.read(4000).decode(errors="replace").strip()
            return f"(zygote stderr: {text})" if text else ""
        return ""


class ForkServerLauncher:
    """A launcher whose runs are forks of one zygote per submission (see the module docstring).

    Args:
        inner: the backend that starts the zygote (its sandbox is the submission's).
        wipe: directories inside the sandbox that the zygote restores after every run
            (the backend's private ``/tmp`` and ``/dev/shm``; never a directory other
            submissions or the host use).
        limits: the zygote's own limits; ``None``: the first run's, without a wall-time
            limit and with an hour of CPU (a run's CPU limit is its own).
        start_timeout: seconds the zygote has to import its modules and say it is ready.
        kill_confirm_seconds: seconds the zygote has to confirm a killed run's end before
            the whole sandbox is ended.
        runs: ``"all"``: the zygote imports what every runtime script needs; ``"workers"``:
            only what verdict workers' student code imports (numpy, matplotlib), for a
            launcher that runs nothing else (a notebook runner it forks imports the rest).
    """

    def __init__(self, inner: Launcher, *, wipe: Sequence[str] = (), limits: Limits | None = None,
                 start_timeout: float = 120.0, kill_confirm_seconds: float = 3.0, runs: str = "all") -> None:
        if runs not in ("all", "workers"):
            raise ValueError(f"runs must be 'all' or 'workers', not {runs!r}")
        self.inner = inner
        self.runs = runs
        self.name = inner.name
        self.backend = getattr(inner, "backend", None)  # its exit statuses decode as the inner launcher's
        self.wipe = tuple(wipe)
        self.limits = limits
        self.start_timeout = start_timeout
        self.kill_confirm_seconds = kill_confirm_seconds
        self.submission: object = None
        self.zygote_starts = 0
        self._zygote: _Zygote | None = None
        self._failed: str | None = None
        self._lock = threading.Lock()

    def for_submission(self, key: object) -> ForkServerLauncher:
        """Serve submission ``key`` from now on: a different key ends the current zygote first."""
        with self._lock:
            if key != self.submission:
                self._close_locked()
                self.submission = key
                self._failed = None
        return self

    def spawn(self, script: str, args: Sequence[str], *, scratch: Path, limits: Limits,
              env: Mapping[str, str] | None = None, stdin: int | IO[bytes] | None = subprocess.PIPE,
              stdout: int | IO[bytes] | None = subprocess.PIPE, stderr: int | IO[bytes] | None = subprocess.PIPE,
              writeback: Sequence[str] = ()) -> Any:
        """Start ``runtime/<script>`` as a fork of the submission's zygote (see :meth:`Launcher.spawn`).

        Falls back to the backend's own ``spawn`` when no zygote can serve.
        """
        zygote = self._current(limits)
        if zygote is not None:
            try:
                return zygote.spawn(script, args, scratch=scratch, limits=limits, env=env, stdin=stdin,
                                    stdout=stdout, stderr=stderr, writeback=writeback)
            except ZygoteUnavailable as exc:
                log.warning("%s; running %s without it", exc, script)
                with self._lock:
                    if self._zygote is zygote:
                        self._close_locked()
        return self.inner.spawn(script, args, scratch=scratch, limits=limits, env=env, stdin=stdin, stdout=stdout,
                                stderr=stderr, writeback=writeback)

    def prestart(self, limits: Limits) -> threading.Thread:
        """Start the current submission's zygote now, on a thread of its own, for the first run to find.

        ``limits``: those the first run will be given (the zygote's own derive from them as in
        :meth:`spawn`, so it is the zygote that run would have started). A run spawned while it
        starts waits for it; a zygote that cannot start is what that run would have found (the
        log says why, and runs start without one). Returns the thread.
        """
        thread = threading.Thread(target=self._current, args=(limits,), name="ch11-zygote-prestart", daemon=True)
        thread.start()
        return thread

    def _current(self, limits: Limits) -> _Zygote | None:
        with self._lock:
            if self._zygote is not None and self._zygote.dead:
                self._close_locked()
            if self._zygote is None and self._failed is None:
                own = self.limits or replace(limits, wall_seconds=float("inf"), cpu_seconds=3600)
                try:
                    self._zygote = _Zygote(self.inner, own, self.wipe, self.start_timeout, self.kill_confirm_seconds,
                                           self.runs)
                    self.zygote_starts += 1
                except (ZygoteUnavailable, queue.Empty) as exc:
                    self._failed = str(exc)
                    log.warning("%s; this submission's runs start without a zygote", exc)
            return self._zygote

    def close(self) -> None:
        """End the current zygote and its sandbox."""
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
