"""Timings from inside one nbgrader process, for the benchmarks (never used for grading).

A benchmark course's ``nbgrader_config.py`` ends with::

    import sys; sys.path.insert(0, "<repo>/bench")
    import pipeline_timing; pipeline_timing.install()

When ``$CH11_BENCH_TIMINGS`` names a directory, :func:`install` wraps a few
functions with wall-clock timers and, when the process exits, writes
``<dir>/<pid>.json``. Without the variable it does nothing, so the config
behaves exactly as the course's own. The wrappers only read
``time.perf_counter()`` around the original call and never change arguments,
results or exceptions.

What is timed (seconds, wall clock, ``perf_counter``):

* ``process``: ``created`` (epoch seconds the process was created, from
  ``/proc``, 10 ms resolution), ``config_loaded`` (epoch seconds when this
  config ran: Python start, nbgrader imports and app set-up happen before),
  ``exit`` (epoch seconds at interpreter exit), ``argv``, and with
  ``$CH11_BENCH_CPUACCT=1`` ``cpu_seconds``: CPU time of the process and
  everything it started (sandboxed processes included), else ``None``.
* ``spans``: a list of ``{"name", "start", "seconds", ...}`` with ``start``
  in epoch seconds. Names:

  - ``init_assignment``: nbgrader's per-student set-up (gradebook rows,
    copying the submission); the ``student`` field names the student, and
    every later span belongs to that student until the next one;
  - ``convert:sanitize`` / ``convert:autograde`` / ``convert:feedback``: one
    pass of nbconvert over one notebook (read, preprocessors, write); the
    ``notebook`` field names it;
  - ``pp:<Class>``: one preprocessor's ``preprocess`` on one notebook;
  - ``sandbox_run``: the sandboxed ``execute_notebook.py`` run inside
    ``SandboxedExecute`` (the rest of that preprocessor is copying outputs
    back and sanitizing them);
  - ``launcher``: choosing and probing the sandbox backend (first use only);
  - ``suite_import``: importing the hidden suite modules;
  - ``worker_start``: one verdict worker start (spawn, executing the
    submission's cells, answering hello);
  - ``suite:<grade_id>``: one ``run_suite`` (hypothesis against the worker),
    including any worker (re)start that happened inside it.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ENV = "CH11_BENCH_TIMINGS"
#: Set (to "1") by the benchmark when it runs inside a cpuacct cgroup of its own.
CPU_ENV = "CH11_BENCH_CPUACCT"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")

_spans: list[dict[str, Any]] = []
_active: set[int] = set()
_state: dict[str, Any] = {"installed": False, "notebook": ""}


def _process_created() -> float | None:
    """Epoch seconds at which this process was created (``/proc/self/stat`` field 22), or None."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 overall; fields[0] is field 3
        btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        return btime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _self_cpu_seconds() -> float:
    """CPU seconds this process itself used so far (``/proc/self/stat`` utime + stime)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpuacct_path() -> Path | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            return CPUACCT / path.lstrip("/")
    return None


def _enter_cgroup() -> None:
    """Move this process into a cpuacct cgroup of its own, so everything it starts is counted with it.

    Sandboxed processes are killed rather than reaped, so ``getrusage`` of the
    children would miss them. ``cpu_seconds`` at exit is this process's CPU
    before the move plus the cgroup's usage (itself and every descendant).
    """
    parent = _cpuacct_path()
    if parent is None or not parent.is_dir():
        return
    group = parent / f"nbgrader-{os.getpid()}"
    try:
        group.mkdir()
        before = _self_cpu_seconds()
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    except OSError:
        return
    _state["cgroup"] = group
    _state["cgroup_parent"] = parent
    _state["cpu_before_cgroup"] = before


def _leave_cgroup() -> float | None:
    group = _state.get("cgroup")
    if group is None:
        return None
    try:
        used = int((group / "cpuacct.usage").read_text()) / 1e9
        (_state["cgroup_parent"] / "cgroup.procs").write_text(f"{os.getpid()}\n")
    except OSError:
        return None
    try:
        group.rmdir()  # fails while a descendant still runs; the benchmark removes it later
    except OSError:
        pass
    return _state["cpu_before_cgroup"] + used


def _timed(name: str | Any, original: Any, outer_only: bool = False, detail: Any = None) -> Any:
    """Wrap ``original`` so every call appends a span; ``name`` may be a callable of the arguments.

    ``outer_only``: a call made while the same object (first argument) is
    already inside a wrapped call is not recorded again (a preprocessor whose
    ``preprocess`` calls its parent's). ``detail(*args, **kwargs)`` returns
    extra fields for the span.
    """

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = id(args[0]) if outer_only and args else None
        if key is not None and key in _active:
            return original(*args, **kwargs)
        if key is not None:
            _active.add(key)
        label = name(*args, **kwargs) if callable(name) else name
        start_epoch = time.time()
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            span = {"name": label, "start": start_epoch, "seconds": time.perf_counter() - start,
                    "notebook": _state["notebook"]}
            if detail is not None:
                span.update(detail(*args, **kwargs))
            _spans.append(span)
            if key is not None:
                _active.discard(key)

    wrapper.__bench_wrapped__ = True  # type: ignore[attr-defined]
    return wrapper


def _wrap(owner: Any, attr: str, name: str | Any, outer_only: bool = False, detail: Any = None) -> None:
    original = getattr(owner, attr, None)
    if original is None or getattr(original, "__bench_wrapped__", False):
        return
    setattr(owner, attr, _timed(name, original, outer_only, detail))


def _write() -> None:
    directory = os.environ.get(ENV)
    if not directory:
        return
    cpu = _leave_cgroup()
    record = {
        "pid": os.getpid(),
        "cpu_seconds": cpu,
        "argv": sys.argv,
        "created": _process_created(),
        "config_loaded": _state["config_loaded"],
        "exit": time.time(),
        "spans": _spans,
    }
    path = Path(directory) / f"{os.getpid()}.json"
    path.write_text(json.dumps(record), encoding="utf-8")


def _after_fork() -> None:
    """A forked nbgrader (``batch/nbgrader_fork.py``) is a process of its own: its record starts here.

    Its spans, its ``config_loaded`` (the fork; the imports were the server's) and, with
    ``$CH11_BENCH_CPUACCT=1``, a cgroup of its own, so its ``cpu_seconds`` are its own and
    not the server's group's, which every forked run shares.
    """
    _spans.clear()
    _active.clear()
    _state["config_loaded"] = time.time()
    for key in ("cgroup", "cgroup_parent", "cpu_before_cgroup"):
        _state.pop(key, None)
    if os.environ.get(CPU_ENV) == "1":
        _enter_cgroup()


def install() -> None:
    """Wrap the timed functions of this process (idempotent; a no-op without ``$CH11_BENCH_TIMINGS``)."""
    if _state["installed"] or not os.environ.get(ENV):
        return
    _state["installed"] = True
    _state["config_loaded"] = time.time()
    if os.environ.get(CPU_ENV) == "1":
        _enter_cgroup()

    from nbconvert.preprocessors import Preprocessor
    from nbgrader.converters import base
    from nbgrader.converters.autograde import Autograde

    def convert_name(self: Any, notebook_filename: str) -> str:
        _state["notebook"] = Path(notebook_filename).stem
        if isinstance(self, Autograde):
            return "convert:sanitize" if self._sanitizing else "convert:autograde"
        return "convert:" + type(self).__name__.lower()

    _wrap(base.BaseConverter, "convert_single_notebook", convert_name)
    _wrap(Autograde, "init_assignment", "init_assignment",
          detail=lambda self, assignment_id, student_id, *a, **k: {"student": student_id})

    # Every preprocessor class nbconvert knows at this point (the config imported the course's).
    def subclasses(cls: type) -> list[type]:
        found = []
        for sub in cls.__subclasses__():
            found.append(sub)
            found.extend(subclasses(sub))
        return found

    for cls in [Preprocessor, *subclasses(Preprocessor)]:
        if "preprocess" in vars(cls):
            _wrap(cls, "preprocess", lambda self, *a, **k: f"pp:{type(self).__name__}", outer_only=True)

    try:
        from ch11_autograder.trusted.steps import sandboxed_execute, trusted_verdicts
        from ch11_autograder.trusted.steps.process import GradingProcess
        from ch11_autograder.trusted.worker_client import WorkerSession
    except ImportError:  # a plain nbgrader course without the package
        pass
    else:
        _wrap(sandboxed_execute, "run_limited", "sandbox_run")
        _wrap(GradingProcess, "launcher", "launcher")
        _wrap(trusted_verdicts, "load_suite_modules", "suite_import")
        _wrap(trusted_verdicts, "run_suite", lambda suite, *a, **k: f"suite:{suite.grade_id}")
        _wrap(WorkerSession, "start", "worker_start")
    atexit.register(_write)
    os.register_at_fork(after_in_child=_after_fork)
