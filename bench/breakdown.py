"""Where the time of one nbgrader process goes, from a ``pipeline_timing`` record.

Phases of an ``nbgrader autograde --student X`` process (seconds, wall clock):

* ``startup``: process creation to nbgrader's first per-student step (Python
  start, importing nbgrader and the course config, app and gradebook set-up);
* ``init_assignment``: nbgrader's per-student set-up;
* ``sanitize``: nbgrader's sanitize pass over every notebook (read, ClearOutput,
  DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata, write);
* ``execute``: the notebook execution step (``SandboxedExecute``: sandbox
  probe, sandboxed kernel run, copying outputs back; plain nbgrader: ``Execute``
  in the kernel, test cells included), with ``execute_sandbox_run`` the
  sandboxed ``execute_notebook.py`` run alone and ``sandbox_probe`` the
  one-time launcher probe;
* ``worker_start``: verdict worker starts (spawn, running the submission's
  cells, hello), restarts included;
* ``suite_import``: importing the hidden suites;
* ``suites``: hypothesis suites against the worker, worker starts excluded,
  with ``suites_by_notebook`` splitting them per exercise notebook;
* ``verdicts_other``: the rest of ``TrustedVerdicts`` (collecting cells, writing outputs);
* ``autograde_other``: the rest of the autograde pass (nbconvert read/write,
  IgnorePattern, LimitOutput, SaveAutoGrades, ...);
* ``shutdown``: last step to process exit;
* ``unaccounted``: what is left (between notebooks).

The phases add up to ``process`` (creation to exit). For a process that
grades several students (plain ``nbgrader autograde`` over a class),
:func:`student_breakdowns` splits the spans at each ``init_assignment``: a
student's ``process`` is then its own stretch (its ``init_assignment`` to the
next one, or to the last step), without ``startup`` and ``shutdown``, which
the process pays once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

PHASES = ("startup", "init_assignment", "sanitize", "execute", "worker_start", "suite_import", "suites",
          "verdicts_other", "autograde_other", "shutdown", "unaccounted")


def _inside(span: dict[str, Any], outer: dict[str, Any]) -> bool:
    end = span["start"] + span["seconds"]
    return outer["start"] - 1e-3 <= span["start"] and end <= outer["start"] + outer["seconds"] + 1e-3


def student_breakdowns(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Student -> phase breakdown; a one-student process gets :func:`autograde_breakdown` of the whole process."""
    spans = sorted(record["spans"], key=lambda s: s["start"])
    starts = [i for i, s in enumerate(spans) if s["name"] == "init_assignment"]
    if len(starts) <= 1:
        student = spans[starts[0]].get("student", "") if starts else ""
        return {student: autograde_breakdown(record)}
    out = {}
    for k, i in enumerate(starts):
        j = starts[k + 1] if k + 1 < len(starts) else len(spans)
        part = spans[i:j]
        begin = part[0]["start"]
        end = spans[j]["start"] if j < len(spans) else max(s["start"] + s["seconds"] for s in part)
        out[part[0].get("student", str(k))] = autograde_breakdown(
            {"spans": part, "created": begin, "exit": end}, whole_process=False)
    return out


def autograde_breakdown(record: dict[str, Any], whole_process: bool = True) -> dict[str, Any]:
    """Phase -> seconds for one autograde process, or one student's stretch of it (see the module docstring)."""
    spans = record["spans"]
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        by[span["name"]].append(span)

    def total(name: str) -> float:
        return sum(s["seconds"] for s in by.get(name, []))

    created = record["created"]
    end = record["exit"]
    first = min(s["start"] for s in spans) if spans else end
    last = max(s["start"] + s["seconds"] for s in spans) if spans else end
    execute = total("pp:SandboxedExecute") + total("pp:Execute")
    verdicts = total("pp:TrustedVerdicts")
    worker = total("worker_start")
    suite_spans = [s for name, group in by.items() if name.startswith("suite:") for s in group]
    suites_gross = sum(s["seconds"] for s in suite_spans)
    worker_in_suites = sum(w["seconds"] for w in by.get("worker_start", []) if any(_inside(w, s) for s in suite_spans))
    execute_by_nb: dict[str, float] = defaultdict(float)
    for name in ("pp:SandboxedExecute", "pp:Execute"):
        for s in by.get(name, []):
            execute_by_nb[s["notebook"]] += s["seconds"]
    per_nb: dict[str, float] = defaultdict(float)
    for s in suite_spans:
        nested = sum(w["seconds"] for w in by.get("worker_start", []) if _inside(w, s))
        per_nb[s["notebook"]] += s["seconds"] - nested
    suites = suites_gross - worker_in_suites
    out = {
        "process": end - created,
        "startup": first - created,
        "init_assignment": total("init_assignment"),
        "sanitize": total("convert:sanitize"),
        "execute": execute,
        "execute_by_notebook": {k: round(v, 3) for k, v in sorted(execute_by_nb.items())},
        "execute_sandbox_run": total("sandbox_run"),
        "sandbox_probe": total("launcher"),
        "worker_start": worker,
        "worker_starts": len(by.get("worker_start", [])),
        "suite_import": total("suite_import"),
        "suites": suites,
        "suites_by_notebook": {k: round(v, 3) for k, v in sorted(per_nb.items())},
        "verdicts_other": verdicts - worker - suites - total("suite_import"),
        "autograde_other": total("convert:autograde") - execute - verdicts,
        "shutdown": end - last,
    }
    accounted = sum(out[p] for p in PHASES if p != "unaccounted")
    out["unaccounted"] = out["process"] - accounted
    if not whole_process:
        out["unaccounted"] += out.pop("startup") + out.pop("shutdown")
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}


def process_seconds(record: dict[str, Any]) -> float:
    return round(record["exit"] - record["created"], 3)
