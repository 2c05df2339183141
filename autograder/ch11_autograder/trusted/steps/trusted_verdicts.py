"""``TrustedVerdicts``: every autograded test cell's outputs replaced by its hidden suite's verdict."""

from __future__ import annotations

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer, List, Unicode

from ...protocol import CellOutcome
from ...untrusted.launch import Launcher, Limits
from .. import ahead
from ..grading import first_report
from ..registry import get_suite, load_suite_modules
from ..submission_cells import autograded_test_cells, worker_cells
from ..suite import run_suite
from ..verdict_cache import is_hit, mark_unrepeatable
from ..verdicts import VERDICT_METADATA_KEY, CellVerdict, verdict_outputs
from ..worker_client import WorkerSession
from .sandbox_traits import SandboxTraits
from .support_files import collect_support_files

__all__ = ["TrustedVerdicts"]

#: Failure kinds a verdict cache must not reuse (see TrustedVerdicts.preprocess).
_LOAD_DEPENDENT_KINDS = frozenset({"timeout", "crash", "protocol", "budget", "internal"})


class TrustedVerdicts(SandboxTraits, NbGraderPreprocessor):
    """Replace every autograded test cell's outputs with its hidden suite's verdict.

    Place after LimitOutput and before SaveAutoGrades. For each notebook one
    :class:`WorkerSession` runs the submission's code cells (every code cell
    except autograded test cells) in the sandbox; each test cell's
    :class:`CellSuite` (looked up by ``grade_id``) calls the student's
    functions through it. The outputs written are those of
    ``verdicts.verdict_outputs``: full marks, a plain-float partial score, or
    an error. A test cell without a registered suite gets an error (0 points)
    and an error in the log.
    """

    suite_modules = List(
        Unicode(),
        help="Modules (dotted names or .py paths) that register hidden suites when imported.",
    ).tag(config=True)
    call_timeout = Float(10.0, help="Seconds one call of a student function may take.").tag(config=True)
    startup_timeout = Float(120.0, help="Seconds the worker may take to run all submission cells.").tag(config=True)
    cell_time_limit = Float(60.0, help="Seconds one submission cell may run inside the worker.").tag(config=True)
    max_restarts = Integer(2, help="Fresh workers started after crashes or timeouts, per notebook.").tag(config=True)
    cpu_seconds = Integer(600, help="CPU-time limit per worker process, seconds.").tag(config=True)
    memory_bytes = Integer(2 * 1024**3, help="Memory limit per worker process, bytes.").tag(config=True)
    max_support_bytes = Integer(64 * 1024**2, help="Total size of support files given to the worker.").tag(config=True)
    worker_skip_cells = List(
        Unicode(),
        help="grade_ids of code cells the worker does not run (cells that only draw a figure).",
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        if is_hit(resources):  # VerdictCacheStore writes the verdicts this run gave last time
            return nb, resources
        inputs = self.suite_inputs(nb, resources)
        if inputs is None:
            return nb, resources
        results = ahead.take(resources, inputs)
        if results is None:
            results = self.grade(inputs, self.launcher(resources))
        name = resources.get("unique_key", "notebook")
        for index, _, _ in inputs.tests:
            cell = nb.cells[index]
            verdict = results.verdicts[index]
            cell.outputs = [nbformat.from_dict(o) for o in verdict_outputs(verdict, cell.get("execution_count"))]
            # Set on every autograded test cell, so nothing a submission planted there survives.
            cell.metadata[VERDICT_METADATA_KEY] = verdict.record()
            self.log.info("%s/%s: %g of %g points", name, verdict.grade_id, verdict.score, verdict.points)
            # Time limits, crashes and budgets depend on the machine's load, an internal error on the
            # grader: a fresh run may end otherwise, so such a verdict is never reused.
            unrepeatable = sorted({f.kind for f in verdict.failures} & _LOAD_DEPENDENT_KINDS)
            if unrepeatable:
                mark_unrepeatable(resources, f"{verdict.grade_id}: {', '.join(unrepeatable)}")
        for incident in results.incidents:
            self.log.warning("%s: worker incident: %s", name, incident)
            mark_unrepeatable(resources, "worker incident")
        return nb, resources

    def suite_inputs(self, nb: NotebookNode, resources: ResourcesDict) -> ahead.SuiteInputs | None:
        """What this notebook's suites read from it (the suite modules loaded first); ``None``: no test cells."""
        load_suite_modules(self.suite_modules)
        tests = autograded_test_cells(nb)
        if not tests:
            return None
        directory = resources.get("metadata", {}).get("path") or "."
        return ahead.SuiteInputs(
            tests=tuple((index, str(cell.metadata.get("nbgrader", {}).get("grade_id", "")),
                         float(cell.metadata.get("nbgrader", {}).get("points", 0) or 0)) for index, cell in tests),
            cells=worker_cells(nb, skip=set(self.worker_skip_cells)),
            support=collect_support_files(directory, max_total_bytes=self.max_support_bytes, logger=self.log),
        )

    def worker_limits(self) -> Limits:
        """The limits of a verdict worker's process (its start: ``startup_timeout``; each call has its own)."""
        return Limits(cpu_seconds=self.cpu_seconds, wall_seconds=self.startup_timeout, memory_bytes=self.memory_bytes)

    def grade(self, inputs: ahead.SuiteInputs, launcher: Launcher) -> ahead.SuiteResults:
        """Run every test cell's suite on one worker session running ``inputs.cells``.

        Uses the session from the calling thread only, start to end (see :class:`WorkerSession`).
        """
        session = WorkerSession(
            list(inputs.cells.sources),
            launcher,
            self.worker_limits(),
            self.call_timeout,
            startup_timeout=self.startup_timeout,
            cell_time_limit=self.cell_time_limit,
            max_restarts=self.max_restarts,
            support_files=dict(inputs.support),
        )
        verdicts: dict[int, CellVerdict] = {}
        with session:
            report = first_report(session)
            for index, grade_id, points in inputs.tests:
                verdicts[index] = self._verdict(grade_id, points, session, inputs.cells.visible_outcome(grade_id,
                                                                                                      report))
        return ahead.SuiteResults(verdicts, list(session.incidents))

    def _verdict(self, grade_id: str, points: float, session: WorkerSession,
                 visible: CellOutcome | None) -> CellVerdict:
        suite = get_suite(grade_id)
        if suite is None:
            self.log.error("no hidden suite is registered for autograded test cell %r: it scores 0", grade_id)
            return CellVerdict.unavailable(
                grade_id,
                points,
                "This test cell has no registered property suite, so it cannot be graded automatically; "
                "your instructor has been notified.",
            )
        verdict = run_suite(suite, session, points, self.log, visible=visible)
        if any(f.kind == "internal" for f in verdict.failures):
            self.log.error("suite %s had internal errors; see the log above", grade_id)
        return verdict
