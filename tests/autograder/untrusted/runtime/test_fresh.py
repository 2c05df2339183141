"""A fork given back what a freshly started interpreter has (untrusted/runtime/fresh.py).

A parent captures its state at start, then changes it the way a fork server's imports and
serving loop can (handlers, ignored, blocked and default signals, a wake-up descriptor, a
timer, faulthandler, the umask) and forks; the child restores and reports its state
(``support/process_state.py``), which must equal a fresh ``python -c``'s, signal by signal.
Controls: without ``restore`` the report differs in each changed place, and a write to a
closed pipe kills the child (exit -13), the defect a forked nbgrader had.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from support.process_state import PROBE, differences, fresh_python_state

SERVER = PROBE + r'''
import faulthandler, json, os, signal, sys
from ch11_autograder.untrusted.runtime import fresh

at_start = fresh.capture()
signal.signal(signal.SIGCHLD, lambda *_: None)
signal.signal(signal.SIGTERM, lambda *_: None)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
# A handler, not SIG_IGN: a shell starts background jobs with SIGINT ignored, so a fresh
# interpreter may already ignore it.
signal.signal(signal.SIGINT, lambda *_: None)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2, signal.SIGHUP])
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
faulthandler.enable()
os.umask(0o077)
signal.setitimer(signal.ITIMER_REAL, 1000)
mode = sys.argv[1]
pid = os.fork()
if pid == 0:
    if mode == "restore":
        fresh.restore(at_start)
    os.closerange(3, 1 << 16)  # the caller's part: descriptors the child is not given
    print(json.dumps(process_state(write_to_closed_pipe=mode != "report only")), flush=True)
    os._exit(0)
signal.setitimer(signal.ITIMER_REAL, 0)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), file=sys.stderr)  # the child's status
'''


def forked(mode: str) -> tuple[int, str]:
    """The forked child's exit status and what it printed."""
    done = subprocess.run([sys.executable, "-c", SERVER, mode], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.split()[-1]), done.stdout


@pytest.fixture(scope="module")
def fresh():
    state = fresh_python_state(stdin=subprocess.DEVNULL)
    assert state["pipe_write"] == "BrokenPipeError"
    assert state["dispositions"]["SIGPIPE"] == "SIG_IGN"
    return state


def test_a_restored_fork_is_a_fresh_interpreter_signal_by_signal(fresh):
    status, out = forked("restore")
    assert status == 0
    state = json.loads(out)
    assert differences(state, fresh) == []
    assert len(state["dispositions"]) >= 60  # every signal Python can read was compared


def test_control_an_unrestored_fork_differs_where_the_parent_changed_it(fresh):
    status, out = forked("report only")
    assert status == 0
    found = "\n".join(differences(json.loads(out), fresh))
    for changed in ("SIGCHLD: fork Python handler", "SIGTERM: fork Python handler", "SIGPIPE: fork SIG_DFL",
                    "SIGUSR1: fork SIG_IGN", "SIGINT: fork Python handler", "blocked:", "umask:", "faulthandler:",
                    "SigBlk", "SigIgn"):
        assert changed in found, found


def test_control_an_unrestored_fork_dies_writing_to_a_closed_pipe():
    status, out = forked("unrestored")
    assert status == -signal.SIGPIPE, out
