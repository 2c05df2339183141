"""nbgrader preprocessors that keep the verdict out of the student's process.

Autograde (``Autograde.autograde_preprocessors``, see ``nbgrader_config.py``)::

    VerdictCacheLookup reuse the outputs of a byte-identical notebook graded by the
                       same release and suites, when a cache is configured
                       (``verdict_cache.py``); the steps up to the store then do nothing
    SuitesAhead        start the hidden suites on a thread, to run while the notebook
                       executes, and with a spare core the later notebooks' on the same
                       lane (``ahead.py``); TrustedVerdicts collects their verdicts
    SandboxedExecute   instead of nbgrader's Execute: run the notebook in the
                       sandbox for its outputs only, copy them back as
                       sanitized data
    IgnorePattern, ClearMetadataPreprocessor, LimitOutput   (nbgrader's)
    TrustedVerdicts    replace every autograded test cell's outputs by the
                       verdict of its hidden property suite (and its metadata's
                       ``ch11_verdict`` by the verdict's record, for the class report)
    VerdictCacheStore  write the cached outputs (hit) or store this run's (miss)
    SaveAutoGrades, AssignLatePenalties, CheckCellMetadata  (nbgrader's)

GenerateFeedback (``GenerateFeedback.preprocessors``)::

    GetGrades, StripHiddenTests, SanitizeFeedback, RenderMath, CSSHTMLHeaderPreprocessor

Each preprocessor is one small step and is configured through its traits
(``c.SandboxedExecute.timeout = 60`` ...). The sandbox backend comes from the
``sandbox`` trait, else ``$CH11_SANDBOX``, else bwrap; a backend that cannot
run raises ``SandboxUnavailable`` and nbgrader reports the submission as
failed: grading never silently runs unsandboxed.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import functools
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import IgnorePattern, LimitOutput, NbGraderPreprocessor
from traitlets import Bool, CaselessStrEnum, Float, Integer, List, Unicode

from ..grading_digest import release_digest
from ..protocol import CellOutcome
from ..untrusted.capped_run import Deadline, read_untrusted_file, run_limited
from ..untrusted.choose import choose_launcher, forking_launcher, resolve_backend
from ..untrusted.forkserver import ForkServerLauncher
from ..untrusted.launch import Launcher, Limits
from . import ahead, execution_ahead
from .budget import budget_for
from .execution_input import ExecutionInput, ExecutionRun
from .feedback import OutputBudget, sanitize_notebook, sanitize_outputs
from .grading import first_report
from .offline_math import render_math
from .registry import get_suite, load_suite_modules
from .submission_cells import autograded_test_cells, is_autograded_test, strip_hidden_tests, worker_cells
from .suite import run_suite
from .verdict_cache import (
    LOG_HIT,
    LOG_MISS,
    CacheEntryError,
    CacheState,
    VerdictCache,
    apply_entry,
    cache_state,
    cell_identity,
    entry_key,
    is_hit,
    mark_unrepeatable,
    notebook_digest,
    plain,
    prune,
    read_entry,
    runtime_digest,
    set_cache_state,
    snapshot,
    suites_digest,
    support_digest,
    write_entry,
)
from .verdicts import VERDICT_METADATA_KEY, CellVerdict, verdict_outputs
from .worker_client import WorkerSession

__all__ = [
    "ExecutionAhead",
    "RenderMath",
    "SandboxedExecute",
    "SanitizeFeedback",
    "StripHiddenTests",
    "SuitesAhead",
    "TrustedVerdicts",
    "VerdictCacheLookup",
    "VerdictCacheStore",
    "collect_support_files",
]

log = logging.getLogger(__name__)

_LAUNCHERS: dict[tuple[str, bool, bool], Launcher] = {}

#: Failure kinds a verdict cache must not reuse (see TrustedVerdicts.preprocess).
_LOAD_DEPENDENT_KINDS = frozenset({"timeout", "crash", "protocol", "budget", "internal"})

#: What SuitesAhead logs when it starts a notebook's suites (the batch's tests look for it).
LOG_AHEAD = "hidden suites started while the notebook executes"

#: What SuitesAhead logs when a notebook's turn finds its suites already graded or going (tests look for it).
LOG_GRADED_AHEAD = "hidden suites graded ahead of the notebook's turn"

#: What SandboxedExecute logs when it uses a notebook's run made ahead of its turn (tests look for it).
LOG_EXECUTED_AHEAD = "executed ahead of its turn; that run is used"

#: What start_sandboxes logs, followed by the sandboxes it started (tests look for it).
LOG_SANDBOXES_STARTED = "sandboxes started before the first notebook"

#: Name of the error output SandboxedExecute adds when execution went wrong.
SANDBOX_ERROR_NAME = "SandboxExecutionError"


def _launcher(name: str, resources: ResourcesDict, *, fork: bool, own_sandbox: bool = False) -> Launcher:
    """One launcher per backend name per process (a sandbox probe is not free).

    With ``fork``, runs are forks of one zygote per submission (``untrusted/forkserver.py``):
    the submission is the (assignment, student) pair nbgrader names in ``resources``. A
    notebook graded without one (no submission to share a zygote with) runs without.
    ``own_sandbox``: a second zygote for the submission, in a sandbox of its own, for runs
    that go on while the first zygote's run (SuitesAhead's worker beside the notebook's
    execution), so that neither can signal the other or see its files.
    """
    backend = resolve_backend(name)
    who = resources.get("nbgrader", {})
    submission = (who.get("assignment"), who.get("student"))
    forking = fork and bool(submission[1])
    key = (backend, forking, own_sandbox and forking)
    if key not in _LAUNCHERS:
        base = _LAUNCHERS.get((backend, False, False)) or choose_launcher(backend)
        _LAUNCHERS[(backend, False, False)] = base
        # The second sandbox runs only SuitesAhead's verdict workers: its zygote imports what they need.
        _LAUNCHERS[key] = forking_launcher(base, backend, runs="workers" if own_sandbox else "all") \
            if forking else base
    launcher = _LAUNCHERS[key]
    if isinstance(launcher, ForkServerLauncher):
        launcher.for_submission(submission)
    return launcher


@atexit.register
def _close_launchers() -> None:
    for launcher in _LAUNCHERS.values():
        if isinstance(launcher, ForkServerLauncher):
            launcher.close()
    _close_started_for_plan()


def collect_support_files(
    directory: str | os.PathLike[str], *, max_total_bytes: int, logger: logging.Logger | None = None
) -> dict[str, bytes]:
    """Regular files under ``directory`` except notebooks, as relative POSIX path -> bytes.

    Symbolic links, hidden entries (``.name``), ``__pycache__`` and non-regular
    files are skipped, files are visited in sorted order, and collection stops
    (with a warning) before ``max_total_bytes`` would be exceeded. These are
    the data files a notebook may read; the submission's own directory holds
    only that student's files.
    """
    root = Path(directory)
    found: dict[str, bytes] = {}
    total = 0
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for filename in sorted(filenames):
            if filename.startswith(".") or filename.endswith(".ipynb"):
                continue
            path = Path(dirpath) / filename
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            if total + info.st_size > max_total_bytes:
                (logger or log).warning(
                    "support files exceed %d bytes; %s and later files are left out", max_total_bytes, path
                )
                return found
            found[path.relative_to(root).as_posix()] = path.read_bytes()
            total += info.st_size
    return found


def _source_hash(cell: Any) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(source)
    return hashlib.sha256(str(source).encode("utf-8")).hexdigest()


def _first_message_cell(nb: NotebookNode) -> NotebookNode | None:
    """The cell that carries a whole-notebook message: first non-test code cell, else first code cell."""
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell in code:
        if not is_autograded_test(cell):
            return cell
    return code[0] if code else None


class SandboxedExecute(NbGraderPreprocessor):
    """Execute the notebook inside the sandbox and copy back sanitized outputs only.

    The trusted notebook is written (outputs cleared, hidden test regions
    removed from test cells) into a fresh scratch directory with the
    submission's support files, and ``runtime/execute_notebook.py`` runs it
    under the launcher with these limits. The executed notebook is read back
    as untrusted data: at most ``max_notebook_bytes``, parsed with nbformat,
    and for each cell matched by index, cell type, cell id and source hash,
    only its outputs (sanitized, size-capped) and execution count are copied.
    When execution fails (timeout, crash, unreadable result) the first code
    cell that is not a test cell gets an error output saying so, and grading
    continues: test cell scores never depend on these outputs.

    A cell that times out is interrupted; a kernel that does not answer within
    ``interrupt_grace`` seconds ends the notebook's run ("the kernel stopped
    responding"). All notebooks of one submission share one wall budget,
    ``submission_wall_seconds`` (:mod:`.budget`): each run is limited to what
    the earlier ones left, and once it is spent the remaining notebooks are not
    executed (each gets the error output).
    """

    fork_from_zygote = Bool(
        True,
        help="Start this submission's runs as forks of one pre-imported process in its sandbox "
        "(untrusted/forkserver.py); off: a new interpreter per run.",
    ).tag(config=True)
    sandbox = Unicode("", help="Sandbox backend: bwrap, docker or none. Empty: $CH11_SANDBOX, else bwrap.").tag(
        config=True
    )
    timeout = Integer(60, help="Seconds one cell may run before its kernel is interrupted.").tag(config=True)
    startup_timeout = Integer(60, help="Seconds the kernel may take to start.").tag(config=True)
    wall_seconds = Float(900.0, help="Wall-clock limit for executing the whole notebook, seconds.").tag(config=True)
    submission_wall_seconds = Float(
        600.0, help="Wall-clock budget for executing all of one submission's notebooks together, seconds."
    ).tag(config=True)
    interrupt_grace = Float(
        5.0, help="Seconds a kernel has to answer after a timed-out cell's interrupt before the run ends."
    ).tag(config=True)
    cpu_seconds = Integer(900, help="CPU-time limit per process, seconds.").tag(config=True)
    memory_bytes = Integer(2 * 1024**3, help="Memory limit, bytes.").tag(config=True)
    kernel_name = Unicode("python3", help="Kernel to execute with (the submission's choice is ignored).").tag(
        config=True
    )
    max_notebook_bytes = Integer(64 * 1024**2, help="Largest executed notebook read back, bytes.").tag(config=True)
    max_cell_output_chars = Integer(1024**2, help="Output characters kept per cell.").tag(config=True)
    max_total_output_chars = Integer(16 * 1024**2, help="Output characters kept per notebook.").tag(config=True)
    max_support_bytes = Integer(64 * 1024**2, help="Total size of support files copied into the sandbox.").tag(
        config=True
    )

    def _limits(self, wall_seconds: float) -> Limits:
        return Limits(
            cpu_seconds=self.cpu_seconds,
            wall_seconds=wall_seconds,
            memory_bytes=self.memory_bytes,
            max_output_bytes=1024**2,
        )

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        if is_hit(resources):  # VerdictCacheStore writes the outputs this run left last time
            return nb, resources
        who = resources.get("nbgrader", {})
        submission = (str(who.get("assignment", "")), str(who.get("student", "")))
        budget = budget_for(*submission, self.submission_wall_seconds)
        notebook_name = str(who.get("notebook") or resources.get("unique_key") or "notebook")
        wall = budget.limit_for(self.wall_seconds)
        if wall < 1.0:
            budget.skip(notebook_name)
            execution_ahead.close_plan(submission)  # nothing later can run either
            problem = self._budget_words() + " before this notebook's turn, so it was not run"
            self._report_problem(nb, resources, problem)
            return nb, resources
        inputs = self.prepare(nb, resources)
        claimed = execution_ahead.claim(submission, notebook_name, inputs.key, wall)
        if claimed.run is not None:
            self.log.info("%s: %s (waited %.1f s)", notebook_name, LOG_EXECUTED_AHEAD, claimed.waited_seconds)
            run = claimed.run
        else:
            if claimed.why != "none":
                self.log.info("%s: the run ahead is not used (%s); executing in turn", notebook_name, claimed.why)
            run = self.run(inputs, _launcher(self.sandbox, resources, fork=self.fork_from_zygote), wall)
        result = run.result
        cut = result.timed_out and wall < self.wall_seconds
        budget.charge(notebook_name, result.elapsed_seconds, cut=cut)
        problem = self._budget_words() if cut else self._describe(result)
        if run.unreadable:
            self.log.warning("executed notebook unreadable: %s", run.unreadable)
            problem = problem or "its executed notebook could not be read back"
        copied = self._copy_outputs(nb, run.executed, list(inputs.expected)) if run.executed is not None else 0
        if problem:
            self._report_problem(nb, resources, problem)
        self.log.info("sandboxed execution: outputs of %d cells copied back", copied)
        return nb, resources

    def prepare(self, nb: NotebookNode, resources: ResourcesDict) -> ExecutionInput:
        """What the sandbox gets for ``nb``: the notebook with outputs cleared and hidden tests removed,
        the support files of its directory, the runner's job and the launch settings."""
        sandbox_nb = copy.deepcopy(nb)
        for cell in sandbox_nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
                if is_autograded_test(cell):
                    cell.source, _ = strip_hidden_tests(cell.source)
        text = nbformat.writes(sandbox_nb)
        if not text.endswith("\n"):
            text += "\n"  # as nbformat.write leaves the file
        directory = resources.get("metadata", {}).get("path") or "."
        job = {
            "version": 1,
            "input": "submission.ipynb",
            "output": "executed.ipynb",
            "kernel_name": self.kernel_name,
            "timeout": self.timeout,
            "startup_timeout": self.startup_timeout,
            "interrupt_grace": self.interrupt_grace,
        }
        return ExecutionInput(
            notebook_text=text,
            expected=tuple((cell.cell_type, cell.get("id"), _source_hash(cell)) for cell in sandbox_nb.cells),
            support=collect_support_files(directory, max_total_bytes=self.max_support_bytes, logger=self.log),
            job=job,
            settings={"sandbox": resolve_backend(self.sandbox), "fork": self.fork_from_zygote,
                      "cpu_seconds": self.cpu_seconds, "memory_bytes": self.memory_bytes,
                      "max_notebook_bytes": self.max_notebook_bytes},
        )

    def run(self, inputs: ExecutionInput, launcher: Launcher, wall: float,
            deadline: Deadline | None = None) -> ExecutionRun:
        """Execute ``inputs`` under ``launcher`` within ``wall`` seconds (and ``deadline``, when given),
        in a fresh scratch directory removed afterwards; the executed notebook is read back as
        untrusted data. Call it from a thread that outlives the run (see ``run_limited``)."""
        scratch = Path(tempfile.mkdtemp(prefix="ch11-execute-"))
        try:
            for name, data in inputs.support.items():
                support_file = scratch / name
                support_file.parent.mkdir(parents=True, exist_ok=True)
                support_file.write_bytes(data)
            (scratch / "submission.ipynb").write_text(inputs.notebook_text, encoding="utf-8")
            (scratch / "job.json").write_text(json.dumps(dict(inputs.job)), encoding="utf-8")
            result = run_limited(launcher, "execute_notebook.py", ["job.json"], scratch, self._limits(wall),
                                 writeback=["executed.ipynb"], deadline=deadline)
            try:
                raw = read_untrusted_file(scratch, "executed.ipynb", self.max_notebook_bytes)
                return ExecutionRun(result, nbformat.reads(raw.decode("utf-8"), as_version=4))
            except Exception as exc:  # missing, oversized, planted link, not JSON, not a notebook
                return ExecutionRun(result, None, f"{type(exc).__name__}: {exc}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _budget_words(self) -> str:
        return (
            f"this submission's notebooks together may run for {self.submission_wall_seconds:g} s "
            "(its execution budget), and that was spent"
        )

    def _report_problem(self, nb: NotebookNode, resources: ResourcesDict, problem: str) -> None:
        """Log ``problem`` and put it, as an error output, on the notebook's first message cell."""
        mark_unrepeatable(resources, f"sandboxed execution: {problem}")
        self.log.warning("sandboxed execution of %s: %s", resources.get("unique_key", "notebook"), problem)
        target = _first_message_cell(nb)
        if target is not None:
            message = (
                f"The grader could not execute this notebook completely in its sandbox: {problem}. "
                "Outputs of cells that did not run are missing. Automatic grading does not use these "
                "outputs and continued."
            )
            target.outputs.append(
                nbformat.v4.new_output("error", ename=SANDBOX_ERROR_NAME, evalue=message, traceback=[message])
            )

    def _describe(self, result: Any) -> str:
        """What went wrong with a run, in deterministic words, or ``""``."""
        if result.timed_out:
            return f"it did not finish within {self.wall_seconds:g} s"
        reason = result.killed_reason or ""
        if reason == "memory":
            return "it ran out of memory"
        if reason == "cpu_time":
            return f"it used more than {self.cpu_seconds} s of CPU time"
        if reason.startswith("signal:"):
            return f"it was stopped by {reason.split(':', 1)[1]}"
        if result.returncode != 0:
            status = message = ""
            with contextlib.suppress(ValueError, AttributeError, TypeError, IndexError):
                last_line = result.stdout.decode("utf-8", "replace").strip().splitlines()[-1]
                report = json.loads(last_line)
                status, message = report.get("status", ""), str(report.get("message", ""))
            if status == "kernel_died":
                return "the notebook's kernel died (a cell ended the Python process or used too much memory)"
            # The runner's message is untrusted text: only recognise it, never echo it.
            if status == "error" and message.startswith("KernelFrozen:"):
                return "cells kept timing out and the kernel stopped answering, so later cells were not run"
            if status == "error" and message.startswith("KernelUnresponsive:"):
                return (
                    f"a cell ran longer than {self.timeout} s and the kernel stopped responding (it did not "
                    f"answer the interrupt within {self.interrupt_grace:g} s), so later cells were not run"
                )
            return "the notebook runner failed"
        return ""

    def _copy_outputs(self, nb: NotebookNode, executed: Any, expected: list[tuple[Any, Any, str]]) -> int:
        cells = executed.get("cells") if isinstance(executed, dict) else None
        if not isinstance(cells, list):
            return 0
        budget = OutputBudget(self.max_total_output_chars)
        copied = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index >= len(cells):
                continue
            other = cells[index]
            if not isinstance(other, dict):
                continue
            kind, cell_id, digest = expected[index]
            if other.get("cell_type") != kind or other.get("id") != cell_id or _source_hash(other) != digest:
                self.log.warning("executed cell %d does not match the submitted cell; its outputs are ignored", index)
                continue
            outputs = sanitize_outputs(
                other.get("outputs", []), max_cell_chars=self.max_cell_output_chars, budget=budget
            )
            cell.outputs = [nbformat.from_dict(o) for o in outputs]
            count = other.get("execution_count")
            cell.execution_count = count if type(count) is int and 0 <= count < 10**9 else None
            copied += 1
        return copied


class TrustedVerdicts(NbGraderPreprocessor):
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

    fork_from_zygote = Bool(
        True,
        help="Start this submission's runs as forks of one pre-imported process in its sandbox "
        "(untrusted/forkserver.py); off: a new interpreter per run.",
    ).tag(config=True)
    sandbox = Unicode("", help="Sandbox backend: bwrap, docker or none. Empty: $CH11_SANDBOX, else bwrap.").tag(
        config=True
    )
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
            results = self.grade(inputs, _launcher(self.sandbox, resources, fork=self.fork_from_zygote))
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
    ``enabled`` off, or under the docker backend (see :attr:`BACKENDS`).
    """

    enabled = Bool(True, help="Start the suites before execution (off: TrustedVerdicts grades in place).").tag(
        config=True
    )
    later = CaselessStrEnum(
        ["auto", "on", "off"], "auto",
        help="Grade the later notebooks' suites ahead of their turns too; auto: when this process may use "
        "more than one core (with one, grading ahead only moves the same work and reading them costs more).",
    ).tag(config=True)

    #: Backends whose runs of one submission are kept apart when their zygotes are: each bwrap sandbox has its
    #: own processes and files. Inside the grading container (docker) every run of a slot is one uid, which
    #: may signal the others, so a worker beside a running notebook could be hit by it: grading stays in place.
    #: ``none`` isolates nothing either way (trusted runs only).
    BACKENDS = frozenset({"bwrap", "none"})

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
        launcher = _launcher(verdicts.sandbox, resources, fork=verdicts.fork_from_zygote, own_sandbox=True)
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
        return self.enabled and resolve_backend(verdicts.sandbox) in self.BACKENDS

    def grades_later(self) -> bool:
        """Whether later notebooks are graded ahead (``later``, with auto resolved against this process's cores)."""
        if self.later != "auto":
            return self.later == "on"
        return len(os.sched_getaffinity(0)) > 1

    def _later(self, submission: tuple[str, str], current: str, resources: ResourcesDict,
               verdicts: TrustedVerdicts, launcher: Launcher) -> ahead.Later:
        here = _resources_now(resources, current)

        def later() -> list[tuple[str, ahead.SuiteInputs, Callable[[], ahead.SuiteResults]]]:
            found: list[tuple[str, ahead.SuiteInputs, Callable[[], ahead.SuiteResults]]] = []
            for name, nb in later_notebooks(self.config, submission, current, here, self.log):
                inputs = verdicts.suite_inputs(nb, _resources_of(here, name))
                if inputs is not None:
                    found.append((name, inputs, functools.partial(verdicts.grade, inputs, launcher)))
            self.log.info("%s: grading the suites of %d later notebooks ahead of their turns: %s", current,
                          len(found), ", ".join(name for name, _, _ in found))
            return found

        return later


def _resources_of(resources: ResourcesDict, notebook: str) -> ResourcesDict:
    """``resources`` (of a notebook at its turn) as another notebook of the same submission will have them."""
    other = ResourcesDict()
    other.update(resources)
    other.update({"unique_key": notebook, "output_files_dir": f"{notebook}_files",
                  "nbgrader": {**resources.get("nbgrader", {}), "notebook": notebook}})
    return other


def _resources_now(resources: ResourcesDict, current: str) -> ResourcesDict:
    """A copy of the turn's ``resources`` as they are now (its steps go on changing them), for work done ahead."""
    here = _resources_of(resources, current)
    here["metadata"] = dict(resources.get("metadata", {}))
    return here


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

    Does nothing with ``workers`` 0, under the docker backend (see :attr:`SuitesAhead.BACKENDS`:
    one uid per slot may signal its other runs), or once the execution budget is spent. A
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
        return self.worker_count() > 0 and resolve_backend(execute.sandbox) in SuitesAhead.BACKENDS

    def _plan(self, submission: tuple[str, str], current: str, nb: NotebookNode,
              resources: ResourcesDict) -> execution_ahead.Plan | None:
        workers = self.worker_count()
        execute = SandboxedExecute(config=self.config, parent=self)
        backend = resolve_backend(execute.sandbox)
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
        here = _resources_now(resources, current)

        def runs() -> list[tuple[str, ExecutionInput]]:
            found = [(name, execute.prepare(later, _resources_of(here, name)))
                     for name, later in later_notebooks(self.config, submission, current, here, self.log)]
            self.log.info("%s: executing %d later notebooks ahead of their turns on %d thread(s): %s",
                          current or "notebook", len(found), workers, ", ".join(name for name, _ in found))
            return found

        base = _launcher(execute.sandbox, resources, fork=False)

        def runner_for() -> tuple[execution_ahead.Runner, Any]:
            # One launcher per worker thread: its zygote (when runs fork) is a sandbox of its own, started
            # already for the first worker when start_sandboxes ran before this notebook.
            launcher: Launcher = base
            if execute.fork_from_zygote:
                launcher = _started_for_plan(submission) or forking_launcher(base, backend).for_submission(submission)

            def close() -> None:
                if isinstance(launcher, ForkServerLauncher):
                    launcher.close()

            return (lambda inputs, wall, deadline: execute.run(inputs, launcher, wall, deadline)), close

        return execution_ahead.Plan(runs, limit=limit, workers=workers, runner_for=runner_for, first=first)


#: A zygote started by ``start_sandboxes`` for a submission's plan, for its first worker to take.
_PLAN_LAUNCHERS: dict[tuple[str, str], ForkServerLauncher] = {}
_PLAN_LAUNCHERS_LOCK = threading.Lock()


def _started_for_plan(submission: tuple[str, str]) -> ForkServerLauncher | None:
    with _PLAN_LAUNCHERS_LOCK:
        return _PLAN_LAUNCHERS.pop(submission, None)


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
    _close_started_for_plan()  # one submission at a time: another's is never taken
    execute = SandboxedExecute(config=config)
    if execute.fork_from_zygote and ExecutionAhead(config=config).executes_ahead(execute):
        base = _launcher(execute.sandbox, resources, fork=False)
        plan = forking_launcher(base, resolve_backend(execute.sandbox)).for_submission(submission)
        with _PLAN_LAUNCHERS_LOCK:
            _PLAN_LAUNCHERS[submission] = plan
        plan.prestart(execute._limits(execute.wall_seconds))
        started.append("executions")
    verdicts = TrustedVerdicts(config=config)
    if verdicts.fork_from_zygote and SuitesAhead(config=config).grades_ahead(verdicts):
        lane = _launcher(verdicts.sandbox, resources, fork=True, own_sandbox=True)
        if isinstance(lane, ForkServerLauncher):
            lane.prestart(verdicts.worker_limits())
            started.append("suites")
    if started:
        app.log.info("%s: %s", LOG_SANDBOXES_STARTED, ", ".join(started))


def _close_started_for_plan() -> None:
    """End the zygotes started for a plan that never took them (another submission's, or at exit)."""
    with _PLAN_LAUNCHERS_LOCK:
        left = list(_PLAN_LAUNCHERS.values())
        _PLAN_LAUNCHERS.clear()
    for launcher in left:
        launcher.close()


#: The later notebooks as read for the submission last asked about (``later_notebooks``).
_LATER: dict[tuple[tuple[str, str], str], _Once] = {}
_LATER_LOCK = threading.Lock()


@dataclass
class _Once:
    notebooks: list[tuple[str, NotebookNode]] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def later_notebooks(config: Any, submission: tuple[str, str], current: str, resources: ResourcesDict,
                    logger: Any) -> list[tuple[str, NotebookNode]]:
    """The submission's notebooks after ``current``, each as nbgrader's sanitize steps will leave it.

    Read once per submission (``ExecutionAhead`` and ``SuitesAhead`` both ask; a second caller
    waits for the first's reading): the notebooks are shared, so callers must not change them.
    ``resources`` are the turn's as :func:`_resources_of` copies them. A notebook that cannot be
    read or sanitized is left out (its turn says what is wrong), and so is one the verdict
    cache answers.
    """
    key = (submission, current)
    with _LATER_LOCK:
        once = _LATER.get(key)
        mine = once is None
        if once is None:
            _LATER.clear()  # one submission at a time per process
            once = _LATER[key] = _Once()
    if mine:
        try:
            once.notebooks = _read_later_notebooks(config, submission, current, resources, logger)
        except BaseException as exc:
            once.error = exc
        finally:
            once.done.set()
    once.done.wait()
    if once.error is not None:
        raise once.error
    return once.notebooks


def _read_later_notebooks(config: Any, submission: tuple[str, str], current: str, resources: ResourcesDict,
                          logger: Any) -> list[tuple[str, NotebookNode]]:
    from nbformat import validator
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from traitlets.utils.importstring import import_item

    assignment, student = submission
    coursedir = CourseDirectory(config=config)
    directory = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
    steps = config.Autograde.get("sanitize_preprocessors") or Autograde.class_traits()[
        "sanitize_preprocessors"].default()
    quiet = logging.getLogger(f"{__name__}.ahead-sanitize")
    quiet.propagate, quiet.disabled = False, True  # nbgrader logs each step at its turn; not twice
    lookup = VerdictCacheLookup(config=config, log=quiet)
    later = []
    for path in sorted(directory.glob(coursedir.notebook_id + ".ipynb")):
        name = path.stem
        if path.name <= f"{current}.ipynb" and current:
            continue
        res = _resources_of(resources, name)
        try:
            nb = nbformat.read(str(path), as_version=4)
            if hasattr(validator, "normalize"):
                _, nb = validator.normalize(nb)
            sanitize_res: dict[str, Any] = {**res, "metadata": {"name": name, "path": str(directory)}}
            for step in steps:
                cls = import_item(step) if isinstance(step, str) else step
                nb, sanitize_res = cls(config=config, log=quiet)(nb, sanitize_res)
            # As nbgrader writes the sanitized notebook and reads it back at its turn.
            nb = nbformat.reads(nbformat.writes(nb), as_version=4)
            if hasattr(validator, "normalize"):
                _, nb = validator.normalize(nb)
            nb, res = lookup.preprocess(nb, res)
        except Exception as exc:  # its own turn meets the same problem and reports it
            logger.info("%s is not executed or graded ahead: %s: %s", name, type(exc).__name__, exc)
            continue
        if is_hit(res):  # the cache answers it at its turn: nothing to execute
            continue
        later.append((name, nb))
    return later


#: The steps whose configuration shapes what autograde leaves in a notebook (VerdictCacheLookup's key).
_SHAPING_STEPS: tuple[type, ...] = (SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                    TrustedVerdicts)


def _settings(config: Any) -> str:
    """The effective configurable traits of the shaping steps and the autograde step list, as JSON."""
    steps = {}
    for step in _SHAPING_STEPS:
        instance = step(config=config)
        names = sorted(instance.trait_names(config=True))
        steps[step.__name__] = {name: plain(getattr(instance, name)) for name in names}
    autograde = config.get("Autograde", {})
    steps["Autograde"] = {name: plain(autograde[name]) for name in sorted(autograde)
                          if name in ("autograde_preprocessors", "sanitize_preprocessors")}
    return json.dumps(steps, sort_keys=True)


#: Files nbgrader's submit and collect put beside every submission's notebooks, different for each submission
#: of the same notebooks: not part of the cache key, or no resubmission (and no official run after a practice
#: one) would ever find the verdict of an unchanged notebook.
SUBMISSION_BOOKKEEPING = frozenset({"timestamp.txt", "submission_secret.txt"})


class VerdictCacheLookup(NbGraderPreprocessor):
    """First autograde step: find this notebook's verdict in the cache (``verdict_cache.py``).

    Does nothing unless a cache directory is configured (``c.VerdictCache.directory`` or
    ``$CH11_VERDICT_CACHE``). It computes the key from the notebook as it arrives here (after
    nbgrader's sanitize steps, before any execution), the course's release digest (the working
    directory is the course root while nbgrader converts), the suites, the effective settings,
    the sandbox backend, the runtime and who submitted; on a valid entry the steps up to
    :class:`VerdictCacheStore` do nothing and the store writes the cached outputs. A key that
    cannot be computed (no ``source/<assignment>/``) or an unusable entry means a fresh grade,
    with the reason in the log.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        cache = VerdictCache(config=self.config, parent=self)
        directory = cache.location()
        if directory is None:
            return nb, resources
        who = resources.get("nbgrader", {})
        assignment, student = str(who.get("assignment", "")), str(who.get("student", ""))
        notebook = str(who.get("notebook") or resources.get("unique_key") or "")
        verdicts = TrustedVerdicts(config=self.config)
        execute = SandboxedExecute(config=self.config)
        try:
            parts = {
                "notebook": notebook_digest(nb),
                "support": support_digest({name: data for name, data in collect_support_files(
                    resources.get("metadata", {}).get("path") or ".",
                    max_total_bytes=execute.max_support_bytes, logger=self.log).items()
                    if name not in SUBMISSION_BOOKKEEPING}),
                "release": release_digest(Path.cwd(), assignment),
                "suites": suites_digest(verdicts.suite_modules),
                "settings": _settings(self.config),
                "sandbox": resolve_backend(verdicts.sandbox),
                "runtime": runtime_digest(),
                "who": json.dumps([assignment, student, notebook]),
            }
        except (OSError, ValueError) as exc:
            self.log.warning("verdict cache: no key for %s (%s); grading afresh", notebook, exc)
            return nb, resources
        state = CacheState(directory, entry_key(parts), cell_identity(nb))
        set_cache_state(resources, state)
        try:
            state.cells = read_entry(directory, state.key, nb, state.identity, max_bytes=cache.max_entry_bytes)
        except CacheEntryError as exc:
            self.log.warning("verdict cache: entry %s for %s is unusable (%s); grading afresh",
                             state.key[:16], notebook, exc)
        if state.cells is not None:
            self.log.info("%s %s (entry %s): outputs and verdicts reused", LOG_HIT, notebook, state.key[:16])
        else:
            self.log.info("%s %s (entry %s)", LOG_MISS, notebook, state.key[:16])
        return nb, resources


class VerdictCacheStore(NbGraderPreprocessor):
    """Last step before SaveAutoGrades: write cached outputs (hit) or store this run's (miss).

    On a hit the notebook gets exactly the outputs, execution counts and verdict records the
    earlier run left at this point. On a miss the notebook's state is stored, unless the run
    was marked unrepeatable (an execution problem, a worker incident, a load-dependent
    failure) or the entry would exceed ``VerdictCache.max_entry_bytes``; then the cache is
    pruned to ``VerdictCache.max_bytes``. A cache that cannot be written is logged, never
    fatal: the grade does not depend on it.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        state = cache_state(resources)
        if state is None:
            return nb, resources
        if state.cells is not None:
            apply_entry(nb, state.cells)
            for _, cell in autograded_test_cells(nb):
                record = cell.metadata.get(VERDICT_METADATA_KEY, {})
                self.log.info("%s/%s: verdict reused from the cache", resources.get("unique_key", "notebook"),
                              record.get("grade_id", "?"))
            return nb, resources
        if state.unrepeatable:
            self.log.info("verdict cache: not storing %s (%s)", state.key[:16], state.unrepeatable)
            return nb, resources
        cache = VerdictCache(config=self.config, parent=self)
        try:
            if write_entry(state.directory, snapshot(nb, state.identity, state.key), max_bytes=cache.max_entry_bytes):
                self.log.info("verdict cache: stored entry %s", state.key[:16])
                prune(state.directory, cache.max_bytes)
            else:
                self.log.info("verdict cache: entry %s exceeds %d bytes; not stored", state.key[:16],
                              cache.max_entry_bytes)
        except OSError as exc:
            self.log.warning("verdict cache: could not store entry %s: %s", state.key[:16], exc)
        return nb, resources


class StripHiddenTests(NbGraderPreprocessor):
    """Remove hidden test regions from autograded test cells (for feedback).

    nbgrader's ``ClearHiddenTests`` is not reused: it raises on marker text in
    any non-grade cell (so a submission could break its own feedback) and on an
    unterminated region; this step touches only autograded test cells (whose
    source ``OverwriteCells`` restored from the gradebook) and removes an
    unterminated region to the end of the cell.
    """

    begin_delimiter = Unicode("BEGIN HIDDEN TESTS", help="Marker starting a hidden test region.").tag(config=True)
    end_delimiter = Unicode("END HIDDEN TESTS", help="Marker ending a hidden test region.").tag(config=True)

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if is_autograded_test(cell):
            cell.source, _ = strip_hidden_tests(cell.source, self.begin_delimiter, self.end_delimiter)
        return cell, resources


class SanitizeFeedback(NbGraderPreprocessor):
    """Sanitize outputs, markdown and raw cells before the feedback HTML is rendered.

    See ``feedback.sanitize_notebook``: only safe MIME types, cleaned HTML,
    no output metadata, raw cells never pasted verbatim, size caps.
    """

    max_cell_output_chars = Integer(1024**2, help="Output characters kept per cell.").tag(config=True)
    max_total_output_chars = Integer(16 * 1024**2, help="Output characters kept per notebook.").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        sanitize_notebook(nb, max_cell_chars=self.max_cell_output_chars, max_total_chars=self.max_total_output_chars)
        return nb, resources


class RenderMath(NbGraderPreprocessor):
    """Render the math of markdown cells to MathML, so the feedback page needs no MathJax.

    Place after SanitizeFeedback (the MathML it inserts is generated and checked here, see
    ``offline_math.render_math``). With the feedback template's MathJax macro replaced
    (``offline_math.TEMPLATE_BASEDIR``), the page loads nothing from the network.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: ResourcesDict, index: int
    ) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "markdown":
            cell.source = render_math(str(cell.source))
        return cell, resources
