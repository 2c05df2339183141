"""Which properties make the most calls: where batching the suites' calls would pay most.

    .venv/bin/python bench/calls_per_property.py [--student ada] [--sandbox bwrap] [--top 15]
                                                 [--out bench/results/calls-per-property.json]

Each notebook of ``demo/class/<student>`` gets one worker (as ``python -m
ch11_autograder.exercises --time`` does), and every registered property of its cells runs
through ``run_property`` on a counting session (``exercises.__main__.CountingSession``).
Per property: the student's functions called, the exchanges with the worker for them
(a ``call_many`` is one), the examples hypothesis ran (test-function calls, counted by
wrapping ``hypothesis.given`` in this process; 0 for a property that is not a
``hypothesis_property``), its wall time and its verdict. Calls per example is what a
property can batch without changing how it draws its inputs. Printed: the properties with the
most calls, and every exercise's totals. A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from common import RESULTS, load, write_json


def _counting_examples() -> list[int]:
    """Wrap ``hypothesis.given`` so that every test-function call adds one to the returned counter."""
    import functools

    import hypothesis

    counter = [0]
    given = hypothesis.given

    def counting_given(*args: Any, **kwargs: Any) -> Any:
        def decorate(test: Any) -> Any:
            @functools.wraps(test)
            def counted(*a: Any, **k: Any) -> Any:
                counter[0] += 1
                return test(*a, **k)

            return given(*args, **kwargs)(counted)

        return decorate

    hypothesis.given = counting_given
    return counter


def count(student: str, sandbox: str) -> list[dict[str, Any]]:
    import nbformat
    from ch11_autograder.exercises import EXERCISES, SUITE_MODULES, WORKER_SKIP_CELLS
    from ch11_autograder.exercises.__main__ import CountingSession
    from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR
    from ch11_autograder.trusted.registry import load_suite_modules, registered
    from ch11_autograder.trusted.submission_cells import submission_code_cells
    from ch11_autograder.trusted.suite import run_property
    from ch11_autograder.trusted.worker_client import WorkerSession
    from ch11_autograder.untrusted.choose import choose_launcher
    from ch11_autograder.untrusted.launch import Limits

    load_suite_modules(SUITE_MODULES)
    examples = _counting_examples()
    launcher = choose_launcher(sandbox)
    rows = []
    for exercise in EXERCISES:
        notebook = nbformat.read(DEMO_CLASS_DIR / student / ASSIGNMENT / f"{exercise.notebook}.ipynb", as_version=4)
        cells = submission_code_cells(notebook, skip=set(WORKER_SKIP_CELLS))
        suites = [suite for grade_id, suite in sorted(registered().items()) if grade_id.startswith(exercise.key + "_")]
        with WorkerSession(cells, launcher, Limits(), 10.0) as session:
            session.start()
            counting = CountingSession(session)
            for suite in suites:
                for prop in suite.properties:
                    calls, messages, ran = counting.calls, counting.messages, examples[0]
                    started = time.monotonic()
                    failure = run_property(prop, counting)
                    rows.append(
                        {
                            "exercise": exercise.key,
                            "cell": suite.grade_id,
                            "property": prop.name,
                            "calls": counting.calls - calls,
                            "messages": counting.messages - messages,
                            "examples": examples[0] - ran,
                            "seconds": round(time.monotonic() - started, 3),
                            "verdict": "held" if failure is None else failure.kind,
                        }
                    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="ada")
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS / "calls-per-property.json")
    args = parser.parse_args(argv)
    load_before = load()
    rows = count(args.student, args.sandbox)
    write_json(args.out, {"student": args.student, "sandbox": args.sandbox, "load_before": load_before,
                          "load_after": load(), "properties": rows})
    total = sum(r["calls"] for r in rows)
    print(f"{args.student}, {args.sandbox}: {len(rows)} properties, {total} calls; load {load_before} -> {load()}")
    print(f"{'property':64}  {'calls':>5}  {'share':>5}  {'msgs':>5}  {'examples':>8}  {'calls/ex':>8}  "
          f"{'seconds':>7}  verdict")
    for r in sorted(rows, key=lambda r: -r["calls"])[: args.top]:
        name = f"{r['cell']}.{r['property']}"
        per = f"{r['calls'] / r['examples']:.1f}" if r["examples"] else "-"
        print(f"{name:64}  {r['calls']:>5}  {r['calls'] / total:>5.1%}  {r['messages']:>5}  {r['examples']:>8}  "
              f"{per:>8}  {r['seconds']:>7.2f}  {r['verdict']}")
    print()
    for exercise in sorted({r["exercise"] for r in rows}):
        mine = [r for r in rows if r["exercise"] == exercise]
        print(f"{exercise}: {sum(r['calls'] for r in mine)} calls in {len(mine)} properties, "
              f"{sum(r['seconds'] for r in mine):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
