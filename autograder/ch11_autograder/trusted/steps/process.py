"""What one grading process keeps between its notebooks: :class:`GradingProcess`.

An ``nbgrader autograde`` process grades notebook after notebook, and its steps share
three things across those turns: the launchers (a sandbox probe is not free, and a
submission's runs fork from one zygote), a zygote ``start_sandboxes`` started early for
``ExecutionAhead``'s plan, and the submission's later notebooks as read once for the
steps that work ahead of their turns. They belong to the process, not to a step (nbgrader
makes a new step object per notebook), so one object holds them, made at first use by
:func:`grading_process` and closed at exit. It imports no step: the steps ask it.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nbformat.notebooknode import NotebookNode

from ...untrusted.choose import choose_launcher, forking_launcher, resolve_backend
from ...untrusted.forkserver import ForkServerLauncher
from ...untrusted.launch import Launcher

__all__ = ["GradingProcess", "Sanitized", "grading_process"]

#: ``(assignment, student)``, as nbgrader names a submission.
Submission = tuple[str, str]

#: Later notebooks as :func:`.later_notebooks.later_notebooks` gives them: ``(name, notebook)`` in turn order.
LaterNotebooks = list[tuple[str, NotebookNode]]


@dataclass
class _Once:
    notebooks: LaterNotebooks = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Sanitized:
    """A notebook as the sanitize steps left it ahead of its turn (``sanitize_once.py``).

    Attributes:
        digest: SHA-256 of the notebook's content before the steps ran (what the turn must hand them).
        notebook: the sanitized notebook, the turn's own copy.
        log: ``(level, line)`` of each log line the steps wrote, for the turn to write.
    """

    digest: str
    notebook: NotebookNode
    log: list[tuple[int, str]]


class GradingProcess:
    """The state the steps of one grading process share across its notebooks.

    One submission at a time: a plan's zygote or the later notebooks of another submission
    are dropped when a new one asks. :meth:`close` ends every zygote it holds; the instance of
    :func:`grading_process` is closed at exit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._launchers: dict[tuple[str, bool, bool], Launcher] = {}
        self._plan_launchers: dict[Submission, ForkServerLauncher] = {}
        self._later: dict[tuple[Submission, str], _Once] = {}
        self._sanitized: dict[tuple[Submission, str], Sanitized] = {}

    def launcher(self, name: str, resources: Mapping[str, Any], *, fork: bool, own_sandbox: bool = False) -> Launcher:
        """One launcher per backend name per process (a sandbox probe is not free).

        With ``fork``, runs are forks of one zygote per submission (``untrusted/forkserver.py``):
        the submission is the (assignment, student) pair nbgrader names in ``resources``. A
        notebook graded without one (no submission to share a zygote with) runs without.
        ``own_sandbox``: a second zygote for the submission, in a sandbox of its own, for runs
        that go on while the first zygote's run (SuitesAhead's worker beside the notebook's
        execution), so that neither can signal the other or see its files.
        """
        backend = resolve_backend(name)
        who = resources.get("nbgrader", {})
        submission = (who.get("assignment"), who.get("student"))
        forking = fork and bool(submission[1])
        key = (backend, forking, own_sandbox and forking)
        with self._lock:
            if key not in self._launchers:
                base = self._launchers.get((backend, False, False)) or choose_launcher(backend)
                self._launchers[(backend, False, False)] = base
                # The second sandbox runs only SuitesAhead's verdict workers: its zygote imports what they need.
                self._launchers[key] = forking_launcher(base, backend, runs="workers" if own_sandbox else "all") \
                    if forking else base
            launcher = self._launchers[key]
        if isinstance(launcher, ForkServerLauncher):
            launcher.for_submission(submission)
        return launcher

    def made_launcher(self, backend: str, *, fork: bool, own_sandbox: bool = False) -> Launcher | None:
        """The launcher :meth:`launcher` made for these settings, if it made one (nothing is made here)."""
        with self._lock:
            return self._launchers.get((backend, fork, own_sandbox and fork))

    def keep_for_plan(self, submission: Submission, launcher: ForkServerLauncher) -> None:
        """Hold ``launcher`` (its zygote started early) for the first worker of ``submission``'s plan."""
        with self._lock:
            self._plan_launchers[submission] = launcher

    def take_for_plan(self, submission: Submission) -> ForkServerLauncher | None:
        """The launcher kept for ``submission``'s plan, once: a second call finds nothing."""
        with self._lock:
            return self._plan_launchers.pop(submission, None)

    def close_kept_for_plan(self) -> None:
        """End the zygotes kept for a plan that never took them (another submission's, or at exit)."""
        with self._lock:
            left = list(self._plan_launchers.values())
            self._plan_launchers.clear()
        for launcher in left:
            launcher.close()

    def later_notebooks(self, submission: Submission, current: str, read: Callable[[], LaterNotebooks]
                        ) -> LaterNotebooks:
        """``read()`` for the notebooks after ``current``, called once per submission and turn.

        A second caller waits for the first's reading and gets the same notebooks (shared: callers
        must not change them), or the exception it raised. Asking for another submission or turn
        forgets the last one.
        """
        key = (submission, current)
        with self._lock:
            once = self._later.get(key)
            mine = once is None
            if once is None:
                self._later.clear()  # one submission at a time per process
                once = self._later[key] = _Once()
        if mine:
            try:
                once.notebooks = read()
            except BaseException as exc:
                once.error = exc
            finally:
                once.done.set()
        once.done.wait()
        if once.error is not None:
            raise once.error
        return once.notebooks

    def keep_sanitized(self, submission: Submission, notebook: str, sanitized: Sanitized) -> None:
        """Hold ``notebook``'s sanitizing done ahead for its turn (another submission's are dropped)."""
        with self._lock:
            for key in [key for key in self._sanitized if key[0] != submission]:
                del self._sanitized[key]
            self._sanitized[(submission, notebook)] = sanitized

    def take_sanitized(self, submission: Submission, notebook: str, digest: str) -> Sanitized | None:
        """``notebook``'s sanitizing done ahead, once, if it started from content with ``digest``."""
        with self._lock:
            sanitized = self._sanitized.pop((submission, notebook), None)
        return sanitized if sanitized is not None and sanitized.digest == digest else None

    def close(self) -> None:
        """End every zygote this process holds (the launchers' and any kept for a plan)."""
        with self._lock:
            launchers = list(self._launchers.values())
        for launcher in launchers:
            if isinstance(launcher, ForkServerLauncher):
                launcher.close()
        self.close_kept_for_plan()


_PROCESS: GradingProcess | None = None
_PROCESS_LOCK = threading.Lock()


def grading_process() -> GradingProcess:
    """This process's :class:`GradingProcess`, made at the first call and closed at exit."""
    global _PROCESS
    with _PROCESS_LOCK:
        if _PROCESS is None:
            _PROCESS = GradingProcess()
            atexit.register(_PROCESS.close)
        return _PROCESS
