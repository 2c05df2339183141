"""A fork made into what a freshly started interpreter is: one implementation for every fork that replaces one.

Three processes fork children that stand in for a freshly started Python: the nbgrader
fork server (``ch11_autograder.batch.nbgrader_fork``: each child is an ``nbgrader
autograde``), the zygote (``zygote.py``: each child is a runner or a verdict worker) and a
runner (``execute_notebook.py``: its child is the kernel). Each is itself a freshly started
interpreter, so it calls :func:`capture` first thing, before any import or handler changes
its state, and each child calls :func:`restore` with that record before it does anything
else. A fork keeps its parent's signal handlers, ignored signals, blocked signals, umask
and faulthandler; ``restore`` puts back what the parent had at its start, which is what
the process the fork replaces would have had at its own start:

* every signal's disposition: ``SIG_IGN`` where the interpreter started with it ignored
  (SIGPIPE and SIGXFSZ, which Python ignores at start-up, so that writing to a closed pipe
  raises BrokenPipeError instead of killing the process, and any signal ignored by whoever
  started it), ``default_int_handler`` for SIGINT, ``SIG_DFL`` for the rest;
* no wake-up descriptor for signals, the blocked-signal mask, umask and parent-death signal
  of the start, faulthandler off unless it was on at the start, no interval timer running;
* numpy's global generator (when numpy is imported) seeded from the OS, as a fresh import
  seeds it (the ``random`` module reseeds itself in every fork).

What a fork cannot be given back, and why each difference is harmless, is listed in
docs/sandbox.md ("What a fork resets"). The caller closes the descriptors it does not
pass on; this module does not know which ones those are.

Standard library only and nothing of the package: ``zygote.py`` and ``execute_notebook.py``
load this file by path from their own directory (under a private module name), and
``ch11_autograder.batch.nbgrader_fork`` imports it.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["FreshState", "capture", "restore"]

#: Dispositions no process can change.
_FIXED = frozenset({signal.SIGKILL, signal.SIGSTOP})
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_PR_SET_PDEATHSIG, _PR_GET_PDEATHSIG = 1, 2


@dataclass(frozen=True)
class FreshState:
    """What a freshly started interpreter had: see the module docstring.

    ``dispositions`` maps every signal Python can set to ``SIG_DFL``, ``SIG_IGN`` or
    ``signal.default_int_handler``; ``blocked`` is the blocked-signal mask; ``deathsig`` the
    parent-death signal (``PR_SET_PDEATHSIG``; 0: none), which exec keeps and a fork clears:
    a process started the way the server was (bwrap's ``--die-with-parent``, the batch's
    ``die_with_parent``) has the server's, one started with a plain fork and exec has none.
    """

    dispositions: dict[int, Any]
    blocked: frozenset[int]
    umask: int
    faulthandler: bool
    deathsig: int


def capture() -> FreshState:
    """The calling process's state; call it at the start of a freshly started interpreter."""
    dispositions: dict[int, Any] = {}
    for sig in sorted(signal.valid_signals()):
        if sig in _FIXED:
            continue
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        # At start-up only these three exist; None (a handler installed outside Python) cannot.
        known = (signal.SIG_IGN, signal.default_int_handler)
        dispositions[int(sig)] = handler if handler in known else signal.SIG_DFL
    umask = os.umask(0o077)
    os.umask(umask)
    deathsig = ctypes.c_int(0)
    _libc().prctl(_PR_GET_PDEATHSIG, ctypes.byref(deathsig), 0, 0, 0)
    return FreshState(dispositions, frozenset(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
                      umask, faulthandler.is_enabled(), deathsig.value)


def restore(state: FreshState) -> None:
    """In a forked child (its only thread): give the process ``state`` back, see the module docstring."""
    signal.set_wakeup_fd(-1)
    if faulthandler.is_enabled() and not state.faulthandler:
        faulthandler.disable()  # puts back the handlers it replaced; the loop below sets them anyway
    for sig, handler in state.dispositions.items():
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError, RuntimeError):  # a signal this libc reserves for itself
            continue
    for timer in _TIMERS:
        signal.setitimer(timer, 0)
    signal.pthread_sigmask(signal.SIG_SETMASK, state.blocked)
    os.umask(state.umask)
    _libc().prctl(_PR_SET_PDEATHSIG, state.deathsig, 0, 0, 0)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # a fresh import seeds it from the OS; a fork would draw what its siblings draw


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)
