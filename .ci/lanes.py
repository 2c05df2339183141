"""Run the test suite in two lanes at once: the hub tier in one pytest process, everything else in another.

    python .ci/lanes.py -m EXPR [PYTEST_ARG ...]

``make test`` runs this (and so CI). The tests selected are exactly ``pytest -m EXPR``'s, split in two:

* the **hub lane**: ``-m "(EXPR) and hub"`` (``tests/hub/``, the hub exchange's plug-in on a real hub), then,
  after it, the tests that change the machine's Jupyter config (:data:`AFTER_HUB`: ``tests/test_hermetic.py``
  plants ``/etc/jupyter/nbgrader_config.py``, which the hub's users would read);
* the **main lane**: ``-m "(EXPR) and not hub"`` without :data:`AFTER_HUB`.

Why two: the hub tier spends most of its wall time waiting (a hub's, a proxy's and its services' starts, the
fault tier's planted slow start and the service's held refusals, Chromium pages loading), minutes in which a
2-core machine's cores are free for the rest of the suite. The lanes share nothing that one changes while the
other reads: the hub tier's users, groups and ``/etc/profile.d`` file have names of their own, the exchange
tier's users run commands without login shells (``support/course_users.py``), each lane has its own pytest
temporary folder, so the process-leak check of one never counts the other's processes, and the course venvs
both may build are built under a file lock.

The main lane prints as it runs; the hub lane's output goes to ``build/lanes/hub.log`` (and
``build/lanes/after-hub.log``), printed whole when both lanes have ended, with one line when each ends.

Exit status: 0 only when every lane exited 0. A lane that ran no test (pytest's 5) fails the run, so a
selection that silently empties a lane cannot pass; any other non-zero status is passed on.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "build" / "lanes"
#: Tests that change machine-wide state the hub's users read: run in the hub lane, after the hub tier.
AFTER_HUB = ("tests/test_hermetic.py",)
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
    """A lane's exit status and wall seconds."""

    lane: Lane
    status: int
    seconds: float


def lanes(expr: str, rest: list[str]) -> tuple[list[Lane], list[Lane]]:
    """The hub lane (its processes one after the other) and the main lane, for ``-m expr`` and pytest's other
    arguments ``rest``."""
    ignore = [f"--ignore={path}" for path in AFTER_HUB]
    hub = [Lane("hub", ("-m", f"({expr}) and hub", *rest), LOGS / "hub.log"),
           Lane("after-hub", ("-m", expr, *rest, *AFTER_HUB), LOGS / "after-hub.log")]
    main = [Lane("main", ("-m", f"({expr}) and not hub", *ignore, *rest), None)]
    return hub, main


def status(codes: list[int]) -> int:
    """The run's exit status from its lanes': the first non-zero one, ``NO_TESTS`` (an empty lane) included."""
    return next((code for code in codes if code != 0), 0)


def _run(lane: Lane) -> Ended:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", *lane.args]
    if lane.log is None:
        code = subprocess.run(command, cwd=ROOT, check=False).returncode
    else:
        lane.log.parent.mkdir(parents=True, exist_ok=True)
        with lane.log.open("w", encoding="utf-8") as out:
            code = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    ended = Ended(lane, code, time.monotonic() - started)
    empty = " (it ran no test)" if code == NO_TESTS else ""
    print(f"[lanes] {lane.name} lane ended: exit {code}{empty} after {ended.seconds:.0f} s", flush=True)
    return ended


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "-m":
        print("usage: lanes.py -m EXPR [PYTEST_ARG ...]", file=sys.stderr)
        return 2
    hub, main_lane = lanes(argv[1], argv[2:])
    ended: list[Ended] = []

    def one_after_another(sequence: list[Lane]) -> None:
        ended.extend(_run(lane) for lane in sequence)

    side = threading.Thread(target=one_after_another, args=(hub,), name="hub-lane")
    side.start()
    one_after_another(main_lane)
    side.join()
    for lane in hub:
        if lane.log is not None and lane.log.is_file():
            print(f"\n[lanes] ===== the {lane.name} lane's output ({lane.log.relative_to(ROOT)}) =====", flush=True)
            sys.stdout.write(lane.log.read_text(encoding="utf-8", errors="replace"))
    print("\n[lanes] " + "; ".join(f"{e.lane.name}: exit {e.status} in {e.seconds:.0f} s" for e in ended), flush=True)
    return status([e.status for e in ended])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
