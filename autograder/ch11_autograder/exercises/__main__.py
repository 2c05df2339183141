"""What the hidden suites check, how hard, and how long they take.

    python -m ch11_autograder.exercises              # properties and catalogue sizes
    python -m ch11_autograder.exercises --time       # also grade the reference, time it, count calls

``--time`` runs each notebook's suites against the demo class's complete
submission (``demo/class/ada``) through a real worker under the chosen
sandbox (``--sandbox``, default ``$CH11_SANDBOX`` or bwrap) and reports, per
exercise, the worker start-up, the suite time, the calls each property made
and the score (the reference must get full marks).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import nbformat

from ..paths import ASSIGNMENT, DEMO_CLASS_DIR
from ..trusted.registry import load_suite_modules, registered
from ..trusted.submission_cells import submission_code_cells
from ..trusted.suite import run_suite
from ..trusted.worker_batches import Call, Outcome
from ..trusted.worker_client import WorkerSession
from ..untrusted.choose import choose_launcher
from ..untrusted.launch import Limits
from . import EXERCISES, SUITE_MODULES, WORKER_SKIP_CELLS
from .catalogue import catalogue


class CountingSession:
    """Delegates to a WorkerSession and counts what goes through it.

    ``calls``: the student's functions called (``call``, ``call_watch`` and each call of a
    ``call_many``); ``messages``: exchanges with the worker for them (a ``call_many`` counts one).
    """

    def __init__(self, session: WorkerSession) -> None:
        self._session = session
        self.calls = 0
        self.messages = 0

    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.messages += 1
        return self._session.call(fn, *args, **kwargs)

    def call_watch(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.messages += 1
        return self._session.call_watch(fn, *args, **kwargs)

    def call_many(
        self, calls: Sequence[Call], *, stop_on_error: bool = False, deadline: float | None = None
    ) -> list[Outcome]:
        self.calls += len(calls)
        self.messages += 1
        return self._session.call_many(calls, stop_on_error=stop_on_error, deadline=deadline)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def describe() -> list[tuple[str, str, int, float, int]]:
    """(exercise, grade_id, properties, points, catalogue entries aimed at that cell)."""
    load_suite_modules(SUITE_MODULES)
    rows = []
    for ex in (e.key for e in EXERCISES):
        entries = catalogue(ex)
        for grade_id, suite in sorted(registered().items()):
            if grade_id.startswith(ex + "_"):
                aimed = sum(1 for entry in entries if grade_id in entry.loses)
                rows.append((ex, grade_id, len(suite.properties), suite.points, aimed))
    return rows


def time_reference(sandbox: str | None, student: str = "ada") -> list[dict[str, Any]]:
    launcher = choose_launcher(sandbox)
    out = []
    for ex, stem in ((e.key, e.notebook) for e in EXERCISES):
        nb = nbformat.read(DEMO_CLASS_DIR / student / ASSIGNMENT / f"{stem}.ipynb", as_version=4)
        suites = [s for g, s in sorted(registered().items()) if g.startswith(ex + "_")]
        started = time.monotonic()
        with WorkerSession(submission_code_cells(nb, skip=set(WORKER_SKIP_CELLS)), launcher, Limits(), 10.0) as session:
            session.start()  # runs the submission's cells; timed apart from the suites
            boot = time.monotonic() - started
            counting = CountingSession(session)
            score = points = 0.0
            per_property = []
            suite_started = time.monotonic()
            for suite in suites:
                before = counting.calls
                verdict = run_suite(suite, counting)
                score += verdict.score
                points += suite.points
                per_property.append((counting.calls - before) / len(suite.properties))
            suite_seconds = time.monotonic() - suite_started
        out.append({
            "exercise": ex, "worker_start_s": boot, "suites_s": suite_seconds, "calls": counting.calls,
            "calls_per_property": statistics.mean(per_property), "score": score, "points": points,
        })
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--time", action="store_true", help="grade the reference and time the suites")
    parser.add_argument("--sandbox", default=None, help="bwrap, container-user or none (default: $CH11_SANDBOX)")
    args = parser.parse_args(argv)
    rows = describe()
    print(f"{'exercise':8}  {'test cell':36}  {'properties':>10}  {'points':>6}  {'catalogue':>9}")
    for ex, grade_id, props, pts, aimed in rows:
        print(f"{ex:8}  {grade_id:36}  {props:>10}  {pts:>6g}  {aimed:>9}")
    for ex in (e.key for e in EXERCISES):
        mine = [r for r in rows if r[0] == ex]
        print(f"{ex}: {sum(r[2] for r in mine)} properties in {len(mine)} cells, "
              f"{len(catalogue(ex))} catalogued wrong answers")
    if args.time:
        print()
        print(f"{'exercise':8}  {'worker start':>12}  {'suites':>8}  {'calls':>6}  {'calls/prop':>10}  score")
        for row in time_reference(args.sandbox):
            print(f"{row['exercise']:8}  {row['worker_start_s']:>11.2f}s  {row['suites_s']:>7.2f}s  "
                  f"{row['calls']:>6}  {row['calls_per_property']:>10.1f}  {row['score']:g}/{row['points']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
