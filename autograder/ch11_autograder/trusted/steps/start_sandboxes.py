"""``start_sandboxes``: nbgrader's ``pre_convert_hook``, a submission's zygotes started before its first notebook."""

from __future__ import annotations

from typing import Any

from nbconvert.exporters.exporter import ResourcesDict

from ...untrusted.choose import forking_launcher
from ...untrusted.forkserver import ForkServerLauncher
from ..verdict_cache import VerdictCache
from .execution_ahead import ExecutionAhead
from .process import grading_process
from .sandboxed_execute import SandboxedExecute
from .suites_ahead import SuitesAhead
from .trusted_verdicts import TrustedVerdicts

__all__ = ["LOG_SANDBOXES_STARTED", "start_sandboxes"]

#: What start_sandboxes logs, followed by the sandboxes it started (tests look for it).
LOG_SANDBOXES_STARTED = "sandboxes started before the first notebook"


def start_sandboxes(*, assignment: str, student: str, notebooks: list[str], **_: Any) -> None:
    """nbgrader's ``pre_convert_hook``: start a submission's two zygotes before its first notebook.

    ExecutionAhead's plan and SuitesAhead's lane each start their sandbox's zygote
    (``untrusted/forkserver.py``) at their first run, about 0.4 s into the submission: after
    nbgrader's set-up, the first notebook's sanitize steps and the suites' import, while the
    process keeps one core busy. Called before all of that (``c.Autograde.pre_convert_hook``),
    this starts the same two zygotes, each with the limits its first run will give it, on
    threads of their own; the first runs find them started, or wait for them as they would
    for their own. Nothing else changes: the same sandboxes run the same work.

    Only what the steps will use, judged by the running ``nbgrader autograde``'s settings
    (its command line included, from traitlets' application instance) through the steps' own
    tests (``ExecutionAhead.executes_ahead``, ``SuitesAhead.grades_ahead``): nothing without an
    application, without one named student (nbgrader passes the ``--student`` pattern, so an
    autograde of every student starts nothing early), when runs do not fork, or when a verdict
    cache is configured (a notebook it answers starts no sandbox).
    """
    from traitlets.config import Application

    # nbgrader passes the command line's --student and assignment, which may be patterns ("*": every
    # student): the submission being converted is then unknown, and sandboxes started for it would be another's.
    named = all(value and not set(value) & set("*?[") for value in (assignment, student))
    if not named or not notebooks or not Application.initialized():
        return
    app = Application.instance()
    config = app.config
    if VerdictCache(config=config).location() is not None:
        return
    started = []
    submission = (assignment, student)
    resources = ResourcesDict()
    resources["nbgrader"] = {"assignment": assignment, "student": student}
    process = grading_process()
    process.close_kept_for_plan()  # one submission at a time: another's is never taken
    execute = SandboxedExecute(config=config)
    if execute.fork_from_zygote and ExecutionAhead(config=config).executes_ahead(execute):
        base = process.launcher(execute.sandbox, resources, fork=False)
        plan = forking_launcher(base, execute.backend()).for_submission(submission)
        process.keep_for_plan(submission, plan)
        plan.prestart(execute._limits(execute.wall_seconds))
        started.append("executions")
    verdicts = TrustedVerdicts(config=config)
    if verdicts.fork_from_zygote and SuitesAhead(config=config).grades_ahead(verdicts):
        lane = process.launcher(verdicts.sandbox, resources, fork=True, own_sandbox=True)
        if isinstance(lane, ForkServerLauncher):
            lane.prestart(verdicts.worker_limits())
            started.append("suites")
    if started:
        app.log.info("%s: %s", LOG_SANDBOXES_STARTED, ", ".join(started))
