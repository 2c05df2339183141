"""What holding feedback's names to the kill table costs a submission's grading, CPU in the trusted process.

    .venv/bin/python bench/kill_table_cost.py            # -> JSON on stdout

Two parts, both in the grading process and nowhere else (no call of the student's code is added):
``confirm_names`` once per test cell, timed here on its worst case (every property of the cell
failed, each named after the last misconception it offers, so each search runs longest), and the
five exercises' ``kill_table.json`` read once per grading process (``exercises.catalogue``
caches them), timed from a cold cache. A benchmark: nothing is asserted.
"""

from __future__ import annotations

import json
import sys
import time
import timeit
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ch11_autograder.exercises import EXERCISES
from ch11_autograder.exercises.catalogue import _kill_table, catalogue, kill_table_row
from ch11_autograder.trusted.misconception_naming import confirm_names
from ch11_autograder.trusted.verdicts import Failure
from support import exercise_grading

REPEATS = 2000


def main() -> int:
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    cells = {}
    for exercise in EXERCISES:
        for suite in exercise_grading.suites(exercise.key):
            failures = [Failure(p.name, p.description, "mismatch", advice="a",
                                misconception=p.misconceptions[-1].name if p.misconceptions else "")
                        for p in suite.properties]
            seconds = timeit.timeit(lambda s=suite, f=failures: confirm_names(s, f), number=REPEATS) / REPEATS
            cells[suite.grade_id] = round(seconds * 1e6, 1)
    _kill_table.cache_clear()
    start = time.perf_counter()
    rows = sum(kill_table_row(entry) is not None for e in EXERCISES for entry in catalogue(e.key))
    read_ms = (time.perf_counter() - start) * 1e3
    print(json.dumps({"confirm_names_us_per_cell": cells, "all_cells_us": round(sum(cells.values()), 1),
                      "reading_kill_tables_ms": round(read_ms, 2), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
