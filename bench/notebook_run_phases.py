"""Where a sandboxed notebook run's time goes, besides the cells' own execution.

    .venv/bin/python bench/notebook_run_phases.py [--student ada] [--repeats 5] [--sandbox bwrap]
        [--out bench/results/notebook-run-phases/NAME.json]

Runs ``SandboxedExecute.preprocess`` (the autograde step, forked from the submission's zygote as
in grading) on each notebook of ``demo/class/<student>/ch11``, ``--repeats`` times; every
repetition is a submission of its own (its own zygote and sandbox). The runner reports its
phases on stderr (``CH11_RUN_PHASES=1``, see ``untrusted/runtime/execute_notebook.py``), the
grader's side is timed by wrapping ``run_limited``, the launcher's ``spawn`` and
``_copy_outputs``; all timestamps are ``time.monotonic()``, which the sandboxed processes share.

Phases of one notebook (wall seconds; the first notebook of a submission also starts the zygote):

* ``grader_prepare``: the preprocessor up to the run (copy, strip, support files, scratch writes);
* ``spawn``: the launcher's ``spawn`` (the fork request and its files; the zygote's start on the
  submission's first notebook, reported apart as ``zygote_start``);
* ``to_runner``: ``spawn``'s return to the runner's ``main`` (the fork, ``runpy``);
* ``runner_setup``: the runner's job and notebook reading;
* ``kernel_fork``: forking the kernel and building its manager;
* ``kernel_start``: from the fork to the first ``kernel_info_reply`` (ipykernel starting);
* ``ready_settle``: from that reply to nbclient's ``on_notebook_start`` (jupyter_client's
  ``wait_for_ready``: the IOPub check and flush);
* ``client_start``: from there to the first cell sent (nbclient's own ``kernel_info``);
* ``cells_kernel``: the cells' own execution as the kernel timed it (request start to reply);
* ``cells_messages``: each cell's span as the runner saw it less the kernel's (the request and
  reply messages, the wait for IOPub's idle status, nbclient collecting outputs);
* ``cells_writes``: the notebook written after every cell;
* ``between_cells``: from one cell's hook to the next cell's send (nbclient's loop, skipped cells);
* ``runner_finish``: from the last cell to the end of ``execute`` (the kernel's clean-up starts);
* ``exit_and_copyback``: from there to ``run_limited``'s return (the last write, the runner's
  exit, the zygote's reaping, the executed notebook's transfer);
* ``grader_readback``: reading and parsing the executed notebook, removing the scratch directory;
* ``copy_outputs``: ``_copy_outputs`` (sanitizing and copying the outputs).

CPU seconds (load-robust, unlike wall time): the grader process during ``preprocess``, the runner
(``getrusage``) and the kernel (``/proc``, read just before it is killed). A benchmark aid:
nothing is asserted. Also records a SHA-256 of each notebook's copied outputs, so two runs can be
checked for identical outputs.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nbformat
from ch11_autograder.paths import ASSIGNMENT, DEMO_CLASS_DIR
from ch11_autograder.trusted.steps import sandboxed_execute
from ch11_autograder.untrusted import forkserver
from ch11_autograder.untrusted.runtime.execute_notebook import PHASES_ENV
from common import machine

PHASE_ORDER = ("grader_prepare", "spawn", "to_runner", "runner_setup", "kernel_fork", "kernel_start",
               "ready_settle", "client_start", "cells_kernel", "cells_messages", "cells_writes",
               "between_cells", "runner_finish", "exit_and_copyback", "grader_readback", "copy_outputs")
#: The phases the cells' own execution is not: what a leaner run could cut.
OVERHEAD = tuple(p for p in PHASE_ORDER if p != "cells_kernel")

_now: dict[str, Any] = {}


def _instrument() -> None:
    """Wrap the grader-side calls whose times the phases need (timers only; arguments unchanged)."""
    original_run = sandboxed_execute.run_limited
    original_spawn = forkserver.ForkServerLauncher.spawn
    original_copy = sandboxed_execute.SandboxedExecute._copy_outputs

    def run_limited(*args: Any, **kwargs: Any) -> Any:
        kwargs["env"] = {**dict(kwargs.get("env") or {}), PHASES_ENV: "1"}
        _now["run_start"] = time.monotonic()
        result = original_run(*args, **kwargs)
        _now["run_end"] = time.monotonic()
        _now["result"] = result
        return result

    def spawn(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = self.zygote_starts
        _now["spawn_start"] = time.monotonic()
        proc = original_spawn(self, *args, **kwargs)
        _now["spawn_end"] = time.monotonic()
        _now["zygote_started"] = self.zygote_starts > before
        return proc

    def copy_outputs(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return original_copy(self, *args, **kwargs)
        finally:
            _now["copy_seconds"] = time.monotonic() - start

    sandboxed_execute.run_limited = run_limited  # type: ignore[assignment]
    forkserver.ForkServerLauncher.spawn = spawn  # type: ignore[method-assign]
    sandboxed_execute.SandboxedExecute._copy_outputs = copy_outputs  # type: ignore[method-assign]


def _runner_report(stderr: bytes) -> dict[str, Any]:
    for line in reversed(stderr.decode("utf-8", "replace").splitlines()):
        if line.startswith("ch11-phases "):
            return dict(json.loads(line[len("ch11-phases "):]))
    raise RuntimeError(f"the runner reported no phases: {stderr[-2000:]!r}")


def _outputs_digest(nb: Any) -> str:
    cells = [[c.get("outputs", []), c.get("execution_count")] for c in nb.cells if c.cell_type == "code"]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()


def run_notebook(path: Path, student: str, sandbox: str) -> dict[str, Any]:
    """One ``SandboxedExecute.preprocess`` of ``path``, with its phases and CPU seconds."""
    nb = nbformat.read(path, as_version=4)
    resources = {"nbgrader": {"assignment": ASSIGNMENT, "student": student, "notebook": path.stem},
                 "metadata": {"path": str(path.parent)}, "unique_key": path.stem}
    step = sandboxed_execute.SandboxedExecute(sandbox=sandbox)
    _now.clear()
    cpu_start = time.process_time()
    start = time.monotonic()
    nb, _ = step.preprocess(nb, resources)
    end = time.monotonic()
    grader_cpu = time.process_time() - cpu_start
    runner = _runner_report(_now["result"].stderr)
    marks = runner["marks"]
    cells = [c for c in runner["cells"] if "done" in c]
    first_sent = cells[0]["sent"] if cells else marks["executed"]
    last_done = cells[-1]["done"] + cells[-1].get("write", 0.0) if cells else marks["ready"]
    between = sum(nxt["sent"] - (cur["done"] + cur.get("write", 0.0)) for cur, nxt in itertools.pairwise(cells))
    kernel = sum(c.get("kernel", 0.0) for c in cells)
    writes = sum(c.get("write", 0.0) for c in cells)
    phases = {
        "grader_prepare": _now["run_start"] - start,
        "spawn": _now["spawn_end"] - _now["run_start"],
        "to_runner": marks["start"] - _now["spawn_end"],
        "runner_setup": marks["read"] - marks["start"],
        "kernel_fork": marks["kernel_forked"] - marks["read"],
        "kernel_start": marks["kernel_info_reply"] - marks["kernel_forked"],
        "ready_settle": marks["ready"] - marks["kernel_info_reply"],
        "client_start": first_sent - marks["ready"],
        "cells_kernel": kernel,
        "cells_messages": sum(c["done"] - c["sent"] for c in cells) - kernel,
        "cells_writes": writes,
        "between_cells": between,
        "runner_finish": marks["executed"] - last_done,
        "exit_and_copyback": _now["run_end"] - marks["executed"],
        "grader_readback": end - _now["run_end"] - _now["copy_seconds"],
        "copy_outputs": _now["copy_seconds"],
    }
    return {
        "notebook": path.stem,
        "total": end - start,
        "zygote_start": phases["spawn"] if _now["zygote_started"] else 0.0,
        "phases": {k: round(v, 4) for k, v in phases.items()},
        "cells": len(cells),
        "cpu": {"grader": round(grader_cpu, 3), "runner": round(runner["runner_cpu"], 3),
                "kernel": runner["kernel_cpu"]},
        "outputs_sha256": _outputs_digest(nb),
        "returncode": _now["result"].returncode,
    }


def summarize(runs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians over repetitions, per notebook and per submission (the sum of a repetition's notebooks)."""
    names = [r["notebook"] for r in runs[0]]
    per_notebook: dict[str, Any] = {}
    for i, name in enumerate(names):
        reps = [rep[i] for rep in runs]
        per_notebook[name] = {
            "total": round(statistics.median(r["total"] for r in reps), 4),
            "phases": {p: round(statistics.median(r["phases"][p] for r in reps), 4) for p in PHASE_ORDER},
            "cpu": {k: round(statistics.median(r["cpu"][k] or 0.0 for r in reps), 3)
                    for k in ("grader", "runner", "kernel")},
        }
    sums = [{p: sum(r["phases"][p] for r in rep) for p in PHASE_ORDER} for rep in runs]
    submission = {
        "total": round(statistics.median(sum(r["total"] for r in rep) for rep in runs), 4),
        "zygote_start": round(statistics.median(sum(r["zygote_start"] for r in rep) for rep in runs), 4),
        "phases": {p: round(statistics.median(s[p] for s in sums), 4) for p in PHASE_ORDER},
        "overhead": round(statistics.median(sum(s[p] for p in OVERHEAD) for s in sums), 4),
        "cpu": {k: round(statistics.median(sum(r["cpu"][k] or 0.0 for r in rep) for rep in runs), 3)
                for k in ("grader", "runner", "kernel")},
    }
    digests = {name: sorted({rep[i]["outputs_sha256"] for rep in runs}) for i, name in enumerate(names)}
    return {"per_notebook": per_notebook, "per_submission": submission, "outputs_sha256": digests}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="ada")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    _instrument()
    folder = DEMO_CLASS_DIR / args.student / ASSIGNMENT
    paths = sorted(folder.glob("*.ipynb"))
    before = machine()
    runs = []
    for rep in range(args.repeats):
        submission = f"{args.student}-phases-{rep}"  # each repetition a submission: its own zygote
        runs.append([run_notebook(path, submission, args.sandbox) for path in paths])
        print(f"repetition {rep + 1}: " + ", ".join(f"{r['notebook']} {r['total']:.2f} s" for r in runs[-1]),
              flush=True)
    result = {"machine_before": before, "machine_after": machine(), "student": args.student,
              "sandbox": args.sandbox, "repeats": args.repeats, "summary": summarize(runs), "runs": runs}
    summary = result["summary"]["per_submission"]
    print(f"per submission (median of {args.repeats}): {summary['total']:.2f} s, overhead {summary['overhead']:.2f} s")
    for phase in PHASE_ORDER:
        print(f"  {phase:18s} {summary['phases'][phase]:7.3f}")
    print(f"  zygote start       {summary['zygote_start']:7.3f} (inside spawn)")
    print(f"  cpu: {summary['cpu']}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
