"""``ExecutionAhead``: a submission's notebooks executed on threads of their own, for their turns to collect."""

from __future__ import annotations

import os
from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from ...untrusted.choose import backend_for, forking_launcher
from ...untrusted.forkserver import ForkServerLauncher
from ...untrusted.launch import Launcher
from .. import execution_ahead
from ..budget import budget_for
from ..execution_input import ExecutionInput
from ..verdict_cache import is_hit
from .later_notebooks import later_notebooks, resources_now, resources_of
from .process import grading_process
from .sandboxed_execute import SandboxedExecute

__all__ = ["ExecutionAhead"]


class ExecutionAhead(NbGraderPreprocessor):
    """Execute the submission's notebooks on threads of their own, for their turns to collect (``execution_ahead.py``).

    Place before ``SandboxedExecute`` (and before ``SuitesAhead``). At the first notebook's turn
    it starts that notebook's sandboxed execution on ``workers`` threads, each in a sandbox of
    its own, and meanwhile reads the submission's later notebooks
    (``submitted/<student>/<assignment>/``, in the order nbgrader takes them), passes each
    through nbgrader's sanitize steps (``Autograde.sanitize_preprocessors``) as nbgrader will at
    its turn, and queues their executions behind it. At each notebook's turn
    ``SandboxedExecute`` uses that run only if it executed exactly the input the turn would
    execute, within the limit the turn gives it; otherwise it executes in turn.

    Does nothing with ``workers`` 0, under a backend whose runs are not kept apart
    (``Backend.keeps_runs_apart``: in the grading container one uid per slot may signal its
    other runs), or once the execution budget is spent. A
    notebook the verdict cache will answer is not run ahead.
    """

    workers = Integer(
        -1,
        help="Notebooks executing at once on threads of their own; 0: none (each executes in its turn); "
        "-1: one per core this process may use beyond the first, at most 1.",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        who = resources.get("nbgrader", {})
        submission = (str(who.get("assignment", "")), str(who.get("student", "")))
        if not submission[1]:
            return nb, resources
        execution_ahead.start_plan(submission, lambda: self._plan(submission, str(who.get("notebook", "")), nb,
                                                                  resources))
        return nb, resources

    def worker_count(self) -> int:
        """How many threads execute ahead (``workers``, with -1 resolved against this process's cores)."""
        if self.workers >= 0:
            return self.workers
        return min(1, max(0, len(os.sched_getaffinity(0)) - 1))

    def executes_ahead(self, execute: SandboxedExecute) -> bool:
        """Whether notebooks execute on the plan's threads at all: workers, and a backend that keeps runs apart."""
        return self.worker_count() > 0 and backend_for(execute.sandbox).keeps_runs_apart

    def _plan(self, submission: tuple[str, str], current: str, nb: NotebookNode,
              resources: ResourcesDict) -> execution_ahead.Plan | None:
        workers = self.worker_count()
        execute = SandboxedExecute(config=self.config, parent=self)
        backend = execute.backend()
        if not self.executes_ahead(execute):
            return None
        budget = budget_for(*submission, execute.submission_wall_seconds)
        limit = budget.limit_for(execute.wall_seconds)
        if limit < 1.0:
            return None
        # This notebook too, first: the submission's notebooks then execute one after another in the plan's
        # sandbox, beside the suites' lane, and the turns' own zygote never starts (bench/README.md, "One
        # student's wait: the font list once, two sandboxes, started at once"; before the suites had a lane,
        # running this notebook in its turn beside the first later one was faster).
        # The later ones are read and sanitized on the plan's threads, not in this turn: a copy of the
        # resources as they are now, since this turn's steps go on changing them.
        first = [] if is_hit(resources) else [(current, execute.prepare(nb, resources))]
        here = resources_now(resources, current)

        def runs() -> list[tuple[str, ExecutionInput]]:
            found = [(name, execute.prepare(later, resources_of(here, name)))
                     for name, later in later_notebooks(self.config, submission, current, here, self.log)]
            self.log.info("%s: executing %d later notebooks ahead of their turns on %d thread(s): %s",
                          current or "notebook", len(found), workers, ", ".join(name for name, _ in found))
            return found

        base = grading_process().launcher(execute.sandbox, resources, fork=False)

        def runner_for() -> tuple[execution_ahead.Runner, Any]:
            # One launcher per worker thread: its zygote (when runs fork) is a sandbox of its own, started
            # already for the first worker when start_sandboxes ran before this notebook.
            launcher: Launcher = base
            if execute.fork_from_zygote:
                launcher = (grading_process().take_for_plan(submission)
                            or forking_launcher(base, backend).for_submission(submission))

            def close() -> None:
                if isinstance(launcher, ForkServerLauncher):
                    launcher.close()

            return (lambda inputs, wall, deadline: execute.run(inputs, launcher, wall, deadline)), close

        return execution_ahead.Plan(runs, limit=limit, workers=workers, runner_for=runner_for, first=first)
