"""A probe of the process state a fork inherits and a freshly started interpreter does not.

:data:`PROBE` is Python source that defines ``process_state()``, returning a JSON-ready dict:
run it wherever a process is to be compared (an nbgrader config file, a notebook cell, a
verdict worker's cells, ``python -c``). :func:`differences` compares two such dicts key by
key, signal by signal.

What it reads: what a write to a pipe whose reader is closed does (``BrokenPipeError`` in
a fresh interpreter, which ignores SIGPIPE; with SIGPIPE at its default the process dies
there, exit -13), every signal's disposition as Python sees it (``signal.getsignal`` for every
signal in ``signal.valid_signals()`` that Python can read) and as the kernel does (the
``SigIgn``, ``SigCgt`` and ``SigBlk`` masks of ``/proc/self/status``), the blocked-signal
mask, the umask, the interval timers, faulthandler, the open descriptors (by kind), the
resource limits, the parent-death signal, ``sys.flags``, the collector's settings, the
thread count, the scheduling priority and CPU affinity.

Not compared, because a fork differs there on purpose or harmlessly (docs/sandbox.md,
"What a fork resets"): the collector's frozen generation (``FROZEN`` key, reported apart)
and anything a caller lists in ``ignore``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

__all__ = ["PROBE", "differences", "fresh_python_state"]

PROBE = r'''
def process_state(write_to_closed_pipe=True):
    import ctypes, faulthandler, gc, os, resource, signal, sys, threading

    pipe_write = "not tried"
    if write_to_closed_pipe:  # SIGPIPE as its disposition says: BrokenPipeError, or the end of this process
        reader, writer = os.pipe()
        os.close(reader)
        try:
            os.write(writer, b"x")
            pipe_write = "written"
        except BrokenPipeError:
            pipe_write = "BrokenPipeError"
        finally:
            os.close(writer)

    names = {signal.SIG_DFL: "SIG_DFL", signal.SIG_IGN: "SIG_IGN", signal.default_int_handler: "default_int_handler"}
    dispositions = {}
    for sig in sorted(signal.valid_signals()):
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(int(sig))
        dispositions[name] = "C handler" if handler is None else names.get(handler, "Python handler")
    status = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("SigBlk", "SigIgn", "SigCgt", "NoNewPrivs"):
                status[key] = value.strip()
    umask = os.umask(0o077)
    os.umask(umask)
    fds = {}
    for entry in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        kind = target.split(":", 1)[0] if target.startswith(("pipe:", "socket:")) else target
        fds[entry] = kind if kind.startswith(("pipe", "socket", "anon_inode", "/dev/")) else "file"
    libc = ctypes.CDLL(None, use_errno=True)
    deathsig = ctypes.c_int(0)
    libc.prctl(2, ctypes.byref(deathsig), 0, 0, 0)  # PR_GET_PDEATHSIG
    limits = {name: list(resource.getrlimit(getattr(resource, name)))
              for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}
    return {
        "dispositions": dispositions,
        "status": status,
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "umask": umask,
        "timers": [list(signal.getitimer(t)) for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)],
        "faulthandler": faulthandler.is_enabled(),
        "fds": dict(sorted(fds.items(), key=lambda item: int(item[0]))),
        "rlimits": limits,
        "deathsig": deathsig.value,
        "flags": repr(sys.flags),
        "gc": [gc.isenabled(), list(gc.get_threshold())],
        "threads": threading.active_count(),
        "priority": os.getpriority(os.PRIO_PROCESS, 0),
        "affinity": sorted(os.sched_getaffinity(0)),
        "pipe_write": pipe_write,
        "FROZEN": gc.get_freeze_count(),
    }
'''


def differences(fork: dict[str, Any], fresh: dict[str, Any], ignore: tuple[str, ...] = ()) -> list[str]:
    """One line per key (one per signal for the dispositions) where ``fork`` is not ``fresh``."""
    out = []
    for key in sorted(set(fork) | set(fresh)):
        if key == "FROZEN" or key in ignore:
            continue
        mine, theirs = fork.get(key), fresh.get(key)
        if key == "dispositions" and isinstance(mine, dict) and isinstance(theirs, dict):
            out += [f"{sig}: fork {mine.get(sig)}, fresh {theirs.get(sig)}"
                    for sig in sorted(set(mine) | set(theirs)) if mine.get(sig) != theirs.get(sig)]
        elif mine != theirs:
            out.append(f"{key}: fork {mine}, fresh {theirs}")
    return out


def fresh_python_state(**popen: Any) -> dict[str, Any]:
    """:data:`PROBE` in a fresh ``python -c`` of this interpreter (keyword arguments: ``subprocess.run``'s)."""
    code = PROBE + "\nimport json\nprint(json.dumps(process_state()))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, **popen)
    return json.loads(done.stdout)
