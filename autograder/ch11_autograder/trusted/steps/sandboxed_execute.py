"""``SandboxedExecute``: the notebook executed in the sandbox for its outputs only (instead of nbgrader's Execute)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Integer, Unicode

from ...untrusted.capped_run import Deadline, read_untrusted_file, run_limited
from ...untrusted.launch import Launcher, Limits
from .. import execution_ahead
from ..budget import budget_for
from ..execution_input import ExecutionInput, ExecutionRun
from ..feedback import OutputBudget, sanitize_outputs
from ..submission_cells import is_autograded_test, strip_hidden_tests
from ..verdict_cache import is_hit, mark_unrepeatable
from .sandbox_traits import SandboxTraits
from .support_files import collect_support_files

__all__ = ["LOG_EXECUTED_AHEAD", "SANDBOX_ERROR_NAME", "SandboxedExecute"]

#: What SandboxedExecute logs when it uses a notebook's run made ahead of its turn (tests look for it).
LOG_EXECUTED_AHEAD = "executed ahead of its turn; that run is used"

#: Name of the error output SandboxedExecute adds when execution went wrong.
SANDBOX_ERROR_NAME = "SandboxExecutionError"


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


class SandboxedExecute(SandboxTraits, NbGraderPreprocessor):
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
            run = self.run(inputs, self.launcher(resources), wall)
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
            settings={"sandbox": self.backend(), "fork": self.fork_from_zygote,
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
