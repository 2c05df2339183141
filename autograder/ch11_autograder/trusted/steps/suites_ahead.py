"""``SuitesAhead``: a notebook's hidden suites started on a thread, to run while it executes (``ahead.py``)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, CaselessStrEnum

from ...untrusted.choose import backend_for
from ...untrusted.launch import Launcher
from .. import ahead
from ..verdict_cache import is_hit
from .later_notebooks import later_notebooks, resources_now, resources_of
from .trusted_verdicts import TrustedVerdicts

__all__ = ["LOG_AHEAD", "LOG_GRADED_AHEAD", "SuitesAhead"]

#: What SuitesAhead logs when it starts a notebook's suites (the batch's tests look for it).
LOG_AHEAD = "hidden suites started while the notebook executes"

#: What SuitesAhead logs when a notebook's turn finds its suites already graded or going (tests look for it).
LOG_GRADED_AHEAD = "hidden suites graded ahead of the notebook's turn"


class SuitesAhead(NbGraderPreprocessor):
    """Start the notebook's hidden suites on a thread now, for ``TrustedVerdicts`` to collect (``ahead.py``).

    Place right before ``SandboxedExecute``: the suites then run while the notebook executes,
    which shortens one submission's grading wherever a core is free. ``TrustedVerdicts``
    uses the early verdicts only if the notebook reaching it has the same suite inputs, and
    grades in place otherwise; without this step in the list it always grades in place.
    The early worker runs in a sandbox of its own (a second zygote of the submission), so
    the notebook executing beside it can neither signal it nor touch its files.

    With ``later`` on, the submission's later notebooks are graded ahead too: their suites
    follow the first notebook's on the same thread (one worker at a time in that sandbox),
    each from the notebook as nbgrader's sanitize steps will leave it (read once, with
    ``ExecutionAhead``), so a notebook's turn finds its verdicts graded or going. A later
    notebook's turn still computes its inputs and uses the early verdicts only when they agree.

    Does nothing on a verdict cache hit, for a notebook without autograded test cells, with
    ``enabled`` off, or under a backend whose runs of one submission are not kept apart
    (``Backend.keeps_runs_apart``: inside the grading container every run of a slot is one uid,
    which may signal the others, so a worker beside a running notebook could be hit by it).
    """

    enabled = Bool(True, help="Start the suites before execution (off: TrustedVerdicts grades in place).").tag(
        config=True
    )
    later = CaselessStrEnum(
        ["auto", "on", "off"], "auto",
        help="Grade the later notebooks' suites ahead of their turns too; auto: when this process may use "
        "more than one core (with one, grading ahead only moves the same work and reading them costs more).",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        if is_hit(resources):
            return nb, resources
        verdicts = TrustedVerdicts(config=self.config, parent=self)
        if not self.grades_ahead(verdicts):
            return nb, resources
        inputs = verdicts.suite_inputs(nb, resources)
        if inputs is None:
            return nb, resources
        # Made here, on nbgrader's thread; a sandbox of its own, so the notebook's run cannot reach the worker.
        launcher = verdicts.launcher(resources, own_sandbox=True)
        who = resources.get("nbgrader", {})
        submission = (str(who.get("assignment", "")), str(who.get("student", "")))
        name = str(resources.get("unique_key", "notebook"))
        if not submission[1]:
            ahead.start(resources, inputs, lambda: verdicts.grade(inputs, launcher))
            self.log.info("%s: %s", name, LOG_AHEAD)
            return nb, resources
        current = str(who.get("notebook") or name)
        later = self._later(submission, current, resources, verdicts, launcher) if self.grades_later() else None
        lane = ahead.lane_for(submission, later)
        if lane.attach(resources, current, inputs, lambda: verdicts.grade(inputs, launcher)):
            self.log.info("%s: %s", name, LOG_GRADED_AHEAD)
        else:
            self.log.info("%s: %s", name, LOG_AHEAD)
        return nb, resources

    def grades_ahead(self, verdicts: TrustedVerdicts) -> bool:
        """Whether the suites start ahead at all: on, and a backend that keeps runs apart."""
        return self.enabled and backend_for(verdicts.sandbox).keeps_runs_apart

    def grades_later(self) -> bool:
        """Whether later notebooks are graded ahead (``later``, with auto resolved against this process's cores)."""
        if self.later != "auto":
            return self.later == "on"
        return len(os.sched_getaffinity(0)) > 1

    def _later(self, submission: tuple[str, str], current: str, resources: ResourcesDict,
               verdicts: TrustedVerdicts, launcher: Launcher) -> ahead.Later:
        here = resources_now(resources, current)

        def later() -> list[tuple[str, ahead.SuiteInputs, Callable[[], ahead.SuiteResults]]]:
            found: list[tuple[str, ahead.SuiteInputs, Callable[[], ahead.SuiteResults]]] = []
            for name, nb in later_notebooks(self.config, submission, current, here, self.log):
                inputs = verdicts.suite_inputs(nb, resources_of(here, name))
                if inputs is not None:
                    found.append((name, inputs, functools.partial(verdicts.grade, inputs, launcher)))
            self.log.info("%s: grading the suites of %d later notebooks ahead of their turns: %s", current,
                          len(found), ", ".join(name for name, _, _ in found))
            return found

        return later
