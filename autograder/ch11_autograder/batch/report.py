"""What a batch tells its TA: progress lines, the grade CSV, the summary, the table.

The CSV is a pure function of the gradebook and the submissions' statuses (no
times, no paths), so grading the same input twice gives identical bytes.
Timings live in the summary and the progress lines only.
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import MissingEntry

from ..course_layout import GRADEBOOK
from ..textsafe import escape
from .gradebook import open_gradebook
from .merge import autograded_cells
from .records import ProgressEvent, SubmissionRecord, format_score

__all__ = [
    "CsvRow",
    "format_duration",
    "format_progress",
    "format_score",
    "grade_rows",
    "render_table",
    "summary_text",
    "write_atomically",
    "write_csv",
]


def format_duration(seconds: float) -> str:
    """``9.8 s``, ``4 min 05 s``, ``1 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def format_progress(event: ProgressEvent) -> str:
    """One line per finished submission, e.g. ``[ 12/200] alice graded 31.5/40 in 9.8 s  ETA 4 min 05 s``."""
    record = event.record
    width = len(str(event.total))
    head = f"[{event.done:>{width}}/{event.total}]"
    if record is None:
        return f"{head} {escape(event.message)}"
    if record.status == "graded":
        what = f"graded {format_score(record.score)}/{format_score(record.max_score)} in {record.seconds:.1f} s"
    elif record.status == "skipped_resume":
        what = f"already graded {format_score(record.score)}/{format_score(record.max_score)} (unchanged; skipped)"
    else:
        what = f"ERROR after {record.seconds:.1f} s: {escape(record.error)}"
    line = f"{head} {escape(record.student)} {what}"
    if record.notes and record.status != "error":
        line += f"  ({len(record.notes)} note{'s' if len(record.notes) != 1 else ''})"
    if event.eta_seconds is not None and event.done < event.total:
        line += f"  ETA {format_duration(event.eta_seconds)}"
    return line


@dataclass(frozen=True)
class CsvRow:
    """One student's line of the grade CSV.

    ``late_penalty`` is nbgrader's (sum over notebooks, from the gradebook; ``None`` for
    errors); ``lms_late`` whether the LMS download marked the submission late.
    """

    student: str
    status: str
    per_notebook: dict[str, float | None]
    total: float | None
    max_total: float
    manual_pending: float | None
    error: str
    late_penalty: float | None = None
    lms_late: bool = False


def grade_rows(course: Path, assignment: str, records: Sequence[SubmissionRecord]) -> list[CsvRow]:
    """One row per record, scores read from the instructor's gradebook (manual overrides count)."""
    rows = []
    with open_gradebook(course / GRADEBOOK) as gb:
        auto = autograded_cells(gb, assignment)
        max_total = round(sum(p for cells in auto.values() for p in cells.values()), 6)
        for record in sorted(records, key=lambda r: r.student):
            per: dict[str, float | None] = dict.fromkeys(sorted(auto))
            total = pending = penalty = None
            if record.status != "error":
                try:
                    sub = gb.find_submission(assignment, record.student)
                except MissingEntry:
                    sub = None
                if sub is not None:
                    pending = 0.0
                    for nb in sub.notebooks:
                        cells = auto.get(nb.name, {})
                        per[nb.name] = round(sum(g.score for g in nb.grades if g.name in cells), 6)
                        pending += sum(g.max_score for g in nb.grades if g.needs_manual_grade)
                    total = round(sum(v for v in per.values() if v is not None), 6)
                    penalty = round(float(sub.late_submission_penalty or 0.0), 6)
            # The CSV is about grades: a submission merged by an earlier run of the batch is "graded" too.
            status = "error" if record.status == "error" else "graded"
            rows.append(CsvRow(record.student, status, per, total, max_total, pending, record.error or "", penalty,
                               record.lms_late))
    return rows


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def write_csv(path: Path, rows: Sequence[CsvRow]) -> None:
    """student, status, one column per notebook, autograded total and max, manual points pending, nbgrader's late
    penalty, ``LATE`` when the LMS marked the submission late, error."""
    notebooks = sorted({nb for row in rows for nb in row.per_notebook})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "status", *notebooks, "autograded_total", "autograded_max", "manual_pending",
                     "late_penalty", "lms_late", "error"])
    for row in rows:
        writer.writerow(
            [row.student, row.status, *(format_score(row.per_notebook.get(nb)) for nb in notebooks),
             format_score(row.total), format_score(row.max_total), format_score(row.manual_pending),
             format_score(row.late_penalty), "LATE" if row.lms_late else "", escape(row.error)]
        )
    write_atomically(path, buffer.getvalue())


def render_table(rows: Sequence[CsvRow], statuses: dict[str, str] | None = None) -> str:
    """The grade table for a terminal, one line per student; ``statuses`` overrides the status column
    (the CLI shows this run's ``skipped_resume`` where the CSV says ``graded``)."""
    notebooks = sorted({nb for row in rows for nb in row.per_notebook})
    headers = ["student", "status", *notebooks, "auto total", "manual pending"]
    body = []
    for row in rows:
        cells = [escape(row.student), (statuses or {}).get(row.student, row.status)]
        if row.status == "error":
            cells += ["-"] * len(notebooks) + ["-", "-"]
        else:
            cells += [format_score(row.per_notebook.get(nb)) or "-" for nb in notebooks]
            cells += [f"{format_score(row.total)}/{format_score(row.max_total)}", format_score(row.manual_pending)]
        body.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in body]
    return "\n".join(lines)


def summary_text(
    records: Sequence[SubmissionRecord],
    *,
    elapsed_seconds: float,
    workers: int,
    sandbox: str,
    source: str,
    intake_notes: Sequence[str],
    batch_problems: Sequence[str],
    slowest: int = 5,
) -> str:
    """Counts by status, mean/median of graded scores, slowest submissions, errors with causes, notes."""
    counts = Counter(r.status for r in records)
    scored = [r.score for r in records if r.status in ("graded", "skipped_resume") and r.score is not None]
    graded_now = [r for r in records if r.status == "graded"]
    max_score = next((r.max_score for r in records), 0.0)
    lines = [
        f"Batch grading summary: {len(records)} submissions from {escape(source)}",
        f"sandbox {sandbox}, {workers} worker{'s' if workers != 1 else ''}, "
        f"wall time {format_duration(elapsed_seconds)}",
        "",
        "status counts: " + ", ".join(f"{s} {counts.get(s, 0)}" for s in ("graded", "skipped_resume", "error")),
    ]
    if scored:
        lines.append(
            f"autograded score (of {format_score(max_score)}): mean {statistics.fmean(scored):.2f}, "
            f"median {format_score(statistics.median(scored))}, min {format_score(min(scored))}, "
            f"max {format_score(max(scored))}"
        )
    if graded_now:
        seconds = [r.seconds for r in graded_now]
        lines.append(
            f"grading time per submission: mean {statistics.fmean(seconds):.1f} s, "
            f"median {statistics.median(seconds):.1f} s"
        )
        lines += ["", f"slowest {min(slowest, len(graded_now))}:"]
        for r in sorted(graded_now, key=lambda r: -r.seconds)[:slowest]:
            lines.append(f"  {escape(r.student)}: {r.seconds:.1f} s")
    errors = [r for r in records if r.status == "error"]
    if errors:
        kept = sum(1 for r in errors if r.earlier is not None)
        also = f"; the gradebook still holds earlier grades of {kept} of them, as each line says" if kept else ""
        lines += ["", f"errors ({len(errors)}{also}):"]
        lines += [f"  {escape(r.student)}: {escape(r.error)}" for r in errors]
    late = [r.student for r in records if r.lms_late]
    if late:
        lines += ["", f"marked LATE by the LMS ({len(late)}): {', '.join(escape(s) for s in late)}",
                  "  The download carries no submission times, so nbgrader computed no lateness for these and applied",
                  "  no late penalty; apply the course's late policy by hand, or grade an nbgrader-layout source whose",
                  "  timestamp.txt holds each submission time."]
    noted = [r for r in records if r.notes]
    if noted or intake_notes:
        lines += ["", "notes:"]
        lines += [f"  {escape(note)}" for note in intake_notes]
        lines += [f"  {escape(r.student)}: {escape(note)}" for r in noted for note in r.notes]
    if batch_problems:
        lines += ["", "batch steps that failed:"]
        lines += [f"  {escape(p)}" for p in batch_problems]
    return "\n".join(lines) + "\n"


def records_json(records: Sequence[SubmissionRecord]) -> str:
    """The records as a JSON list (for tools), sorted by student."""
    from dataclasses import asdict

    return json.dumps([asdict(r) for r in sorted(records, key=lambda r: r.student)], indent=1, sort_keys=True) + "\n"
