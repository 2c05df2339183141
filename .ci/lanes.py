"""Run the test suite in lanes, on three tracks at once.

    python .ci/lanes.py -m EXPR [PYTEST_ARG ...]

``make test`` runs this (and so CI). The tests selected are exactly ``pytest -m EXPR``'s, split into lanes, each
one pytest process, on three tracks that run at once (a track's lanes run one after the other):

* the **hub track**: the hub lane, ``-m "(EXPR) and hub"`` over :data:`HUB` (``tests/hub/``, the hub exchange's
  plug-in on a real hub), then the tests that change the machine's Jupyter config (:data:`AFTER_HUB`:
  ``tests/test_hermetic.py`` plants ``/etc/jupyter/nbgrader_config.py``, which the hub's users would read), then
  the late lane, ``-m "(EXPR) and not hub"`` over the folders of :data:`LATE`;
* the **side track**: ``-m "(EXPR) and not hub"`` over the folders of :data:`SIDE`;
* the **main track**: ``-m "(EXPR) and not hub"`` over everything else.

A lane computes its own session fixtures, so the folders of :data:`LATE` and :data:`SIDE` are whole tiers whose
session fixtures the rest uses little: the one shared is the demo class graded by the batch (about two minutes
of one core), used by ``tests/autograder/batch`` and by the report, formgrader and Gradescope tests of the main
track. The folders were chosen by the main lane's measured durations (``--junitxml``; README, "Tests").

Why three tracks: much of the suite's wall time is waiting (hub, proxy and service starts, the fault tier's
planted slow start, kernels and containers starting, nbgrader's own commands, unix users' logins), and the rest
is one pytest process's work at a time: run alone on an idle 2-core machine, the main lane kept about one core
busy (``/proc/stat``'s user share, 45-50%). Three tracks keep both cores busy; each lane's CPU time (its own and
its waited-for children's, ``os.wait4``) is printed when it ends, so the split can be checked by the numbers. The lanes
share nothing that one changes while another reads: the hub tier's users, groups and ``/etc/profile.d`` file have
names of their own, the exchange tier's users run commands without login shells (``support/course_users.py``),
each lane has its own pytest temporary folder, so the process-leak check of one never counts another's
processes, and the course venvs several may build are built under a file lock.

The main track prints as it runs; the others' output goes to ``build/lanes/<lane>.log``, printed whole when every
track has ended, with one line when each lane ends.

Exit status: 0 only when every lane exited 0. A lane that ran no test (pytest's 5) fails the run, so a
selection that silently empties a lane cannot pass; any other non-zero status is passed on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "build" / "lanes"
#: Tests that change machine-wide state the hub's users read: run in the hub lane, after the hub tier.
AFTER_HUB = ("tests/test_hermetic.py",)
#: Where the hub lane looks for tests marked ``hub`` (a hub test elsewhere is in no lane: tests/test_lanes.py
#: fails on it), so that it does not collect the whole suite to run fifty tests.
HUB = ("tests/hub", "tests/autograder/exchange/hub")
#: Whole tiers run on the hub track once the hub lane and :data:`AFTER_HUB` have ended.
LATE = ("tests/autograder/batch",)
#: Whole tiers run on the side track: folders whose session fixtures no other test uses.
SIDE = ("tests/autograder/serve", "tests/behaviour", "tests/exchange", "tests/hostile", "tests/readers")
#: pytest's exit status when it collected no test.
NO_TESTS = 5


@dataclass(frozen=True)
class Lane:
    """One pytest process: its name, its arguments after ``python -m pytest``, and its log (``None``: the
    terminal)."""

    name: str
    args: tuple[str, ...]
    log: Path | None


@dataclass(frozen=True)
class Ended:
    """A lane's exit status, wall seconds and CPU seconds (user + system, its own and its waited-for
    children's)."""

    lane: Lane
    status: int
    seconds: float
    cpu: float = 0.0


def tracks(expr: str, rest: list[str]) -> list[list[Lane]]:
    """The tracks for ``-m expr`` and pytest's other arguments ``rest``: the hub track, the side track, then the
    main track (the one that prints to the terminal). Each track's lanes run one after the other."""
    not_main = [f"--ignore={path}" for path in (*AFTER_HUB, *LATE, *SIDE)]
    hub = [Lane("hub", ("-m", f"({expr}) and hub", *rest, *HUB), LOGS / "hub.log"),
           Lane("after-hub", ("-m", expr, *rest, *AFTER_HUB), LOGS / "after-hub.log"),
           Lane("late", ("-m", f"({expr}) and not hub", *rest, *LATE), LOGS / "late.log")]
    side = [Lane("side", ("-m", f"({expr}) and not hub", *rest, *SIDE), LOGS / "side.log")]
    main = [Lane("main", ("-m", f"({expr}) and not hub", *not_main, *rest), None)]
    return [hub, side, main]


def status(codes: list[int]) -> int:
    """The run's exit status from its lanes': the first non-zero one, ``NO_TESTS`` (an empty lane) included."""
    return next((code for code in codes if code != 0), 0)


def _wait(command: list[str], out: IO[str] | None) -> tuple[int, float]:
    """Run ``command`` in ROOT; its exit status and CPU seconds. ``os.wait4`` reaps it (``Popen.wait`` would
    not say what it used), so a lane's CPU is told apart from the other tracks' running at the same time."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=None if out is None else subprocess.STDOUT)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def _run(lane: Lane) -> Ended:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", *lane.args]
    if lane.log is None:
        code, cpu = _wait(command, None)
    else:
        lane.log.parent.mkdir(parents=True, exist_ok=True)
        with lane.log.open("w", encoding="utf-8") as out:
            code, cpu = _wait(command, out)
    ended = Ended(lane, code, time.monotonic() - started, cpu)
    empty = " (it ran no test)" if code == NO_TESTS else ""
    print(f"[lanes] {lane.name} lane ended: exit {code}{empty} after {ended.seconds:.0f} s "
          f"({ended.cpu:.0f} CPU-s)", flush=True)
    return ended


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "-m":
        print("usage: lanes.py -m EXPR [PYTEST_ARG ...]", file=sys.stderr)
        return 2
    *others, terminal = tracks(argv[1], argv[2:])
    ended: list[Ended] = []

    def one_after_another(sequence: list[Lane]) -> None:
        ended.extend(_run(lane) for lane in sequence)

    threads = [threading.Thread(target=one_after_another, args=(track,), name=f"{track[0].name}-track")
               for track in others]
    for thread in threads:
        thread.start()
    one_after_another(terminal)
    for thread in threads:
        thread.join()
    for lane in (lane for track in others for lane in track):
        if lane.log is not None and lane.log.is_file():
            print(f"\n[lanes] ===== the {lane.name} lane's output ({lane.log.relative_to(ROOT)}) =====", flush=True)
            sys.stdout.write(lane.log.read_text(encoding="utf-8", errors="replace"))
    print("\n[lanes] " + "; ".join(f"{e.lane.name}: exit {e.status} in {e.seconds:.0f} s, {e.cpu:.0f} CPU-s"
                                   for e in ended), flush=True)
    return status([e.status for e in ended])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
