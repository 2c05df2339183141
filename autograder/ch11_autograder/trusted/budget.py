"""One wall-clock budget for executing all of a submission's notebooks.

``SandboxedExecute`` runs each notebook under its own wall limit
(``wall_seconds``); a submission whose every notebook hangs would otherwise cost
that limit once per notebook. :class:`ExecutionBudget` is the submission's
total: each notebook may run for at most what its predecessors left, and a
notebook that finds the budget spent is not executed at all (its test cells are
still graded by the out-of-kernel suites, which never use these outputs).

Budgets are kept per ``(assignment, student)`` for the life of the nbgrader
process (:func:`budget_for`), so one ``nbgrader autograde`` of a whole class
gives each student a budget of their own. When ``$CH11_EXECUTION_REPORT``
names a file (the batch grader sets it for its isolated runs), every charge
rewrites that file with the budget's use as JSON::

    {"budget_seconds": 600.0, "used_seconds": 12.3,
     "notebooks": {"ex1_fanout": 2.1, ...}, "not_run": [], "cut": []}

``used_seconds`` and the per-notebook values are wall seconds of the sandboxed
runs (rounded to 0.01 s); ``cut`` names notebooks whose run the budget stopped,
``not_run`` those it left unexecuted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..untrusted.launch import EXECUTION_REPORT_ENV

__all__ = ["ExecutionBudget", "budget_for"]


@dataclass
class ExecutionBudget:
    """Wall seconds a submission's notebooks may spend executing, and what they spent.

    Attributes:
        budget_seconds: the total for the submission (> 0).
        used_seconds: spent so far.
        notebooks: notebook name -> seconds its run took.
        not_run: notebooks not executed because the budget was spent.
        cut: notebooks whose run the budget stopped.
    """

    budget_seconds: float
    used_seconds: float = 0.0
    notebooks: dict[str, float] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.budget_seconds - self.used_seconds)

    def limit_for(self, wall_seconds: float) -> float:
        """The wall limit of the next notebook's run: its own limit, or what the budget has left if less."""
        return min(wall_seconds, self.remaining)

    def charge(self, notebook: str, seconds: float, *, cut: bool = False) -> None:
        """Record a run of ``notebook`` that took ``seconds``; ``cut`` when the budget's limit stopped it."""
        self.used_seconds += max(0.0, seconds)
        self.notebooks[notebook] = round(self.notebooks.get(notebook, 0.0) + max(0.0, seconds), 2)
        if cut:
            self.cut.append(notebook)
        self._report()

    def skip(self, notebook: str) -> None:
        """Record that ``notebook`` was not executed: nothing was left."""
        self.not_run.append(notebook)
        self._report()

    def as_json(self) -> dict[str, object]:
        return {
            "budget_seconds": self.budget_seconds,
            "used_seconds": round(self.used_seconds, 2),
            "notebooks": dict(self.notebooks),
            "not_run": list(self.not_run),
            "cut": list(self.cut),
        }

    def _report(self) -> None:
        target = os.environ.get(EXECUTION_REPORT_ENV)
        if not target:
            return
        path = Path(target)
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text(json.dumps(self.as_json(), sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)


_BUDGETS: dict[tuple[str, str], ExecutionBudget] = {}


def budget_for(assignment: str, student: str, budget_seconds: float) -> ExecutionBudget:
    """The budget of ``student``'s submission of ``assignment`` in this process (made on first use).

    ``budget_seconds`` applies when the budget is made; a later call with another value
    gets the existing budget unchanged.
    """
    key = (assignment, student)
    if key not in _BUDGETS:
        _BUDGETS[key] = ExecutionBudget(float(budget_seconds))
    return _BUDGETS[key]
