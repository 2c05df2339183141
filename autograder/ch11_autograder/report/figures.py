"""The class report's figures: matplotlib (Agg) PNGs drawn from a :class:`.data.ClassReport`.

Every figure reads in grayscale: series differ by hatch and edge, not only by shade.
Each :class:`Figure` carries a one-line takeaway computed from the same data. Labels are
grade ids, property names and catalogue titles (the grader's own words) and student ids,
which matplotlib draws as plain text (``usetex`` off, mathtext disabled per label).
"""

from __future__ import annotations

import io
import math
import statistics
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot

import matplotlib.pyplot as plt
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

from ..batch.records import format_score
from .data import ClassReport

__all__ = ["OUTCOME_STYLE", "Figure", "draw_all"]

#: outcome -> (label, face colour, hatch): distinct in grayscale by hatch as much as by shade.
OUTCOME_STYLE = {
    "passed": ("passed", "#f0f0f0", ""),
    "failed": ("failed", "#505050", "xx"),
    "errored": ("errored", "#a0a0a0", "//"),
    "timed_out": ("timed out", "#ffffff", ".."),
}
DPI = 110


@dataclass(frozen=True)
class Figure:
    """One PNG: ``name`` (file stem suffix), ``title``, ``takeaway`` (one line), ``png`` bytes."""

    name: str
    title: str
    takeaway: str
    png: bytes


def _plain(text: str) -> str:
    """Text as matplotlib draws it literally: ``$`` would start mathtext."""
    return text.replace("$", r"\$")


def _png(fig: MplFigure) -> bytes:
    buffer = io.BytesIO()
    # Fixed metadata: the same data gives the same bytes.
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def draw_all(report: ClassReport) -> list[Figure]:
    """Scores, then one outcome figure per notebook with recorded verdicts, misconceptions, grading times."""
    figures = [scores_figure(report)]
    figures += [f for nb in report.notebooks if (f := properties_figure(report, nb.notebook)) is not None]
    figures.append(misconceptions_figure(report))
    figures.append(timing_figure(report))
    return figures


def _bins(maximum: float) -> list[float]:
    steps = max(1, min(10, math.ceil(maximum)))
    return [maximum * i / steps for i in range(steps + 1)]


def scores_figure(report: ClassReport) -> Figure:
    """Histograms: each notebook's points (autograded plus hand marks entered) and the total."""
    scored = report.scored
    panels: list[tuple[str, list[float], float]] = []
    for nb in report.notebooks:
        values = [(s.auto or {}).get(nb.notebook, 0.0) + s.manual.get(nb.notebook, 0.0) for s in scored]
        panels.append((nb.notebook, values, nb.auto_max + nb.manual_max))
    totals = [s.total or 0.0 for s in scored]
    panels.append(("total", totals, report.auto_max + report.manual_max))
    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(10, 3.0 * rows), squeeze=False)
    for ax, (name, values, maximum) in zip(axes.flat, panels, strict=False):
        if values:
            ax.hist(values, bins=_bins(maximum), color="#b0b0b0", edgecolor="black", hatch="//")
        ax.set_title(_plain(name), fontsize=10)
        ax.set_xlim(0, maximum)
        ax.set_xlabel(f"points (of {format_score(maximum)})")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    manual = sum(1 for s in scored for v in s.manual.values() if v)
    fig.suptitle(f"Score distribution ({len(scored)} students; hand marks entered in {manual} notebooks)")
    fig.tight_layout()
    return Figure("scores", "Score distribution", _scores_takeaway(report), _png(fig))


def _scores_takeaway(report: ClassReport) -> str:
    scored = report.scored
    if not scored:
        return "No student has scores in the gradebook yet."
    auto = [s.auto_total or 0.0 for s in scored]
    shares = []
    for nb in report.notebooks:
        if nb.auto_max:
            mean = statistics.fmean((s.auto or {}).get(nb.notebook, 0.0) for s in scored)
            shares.append((mean / nb.auto_max, nb.notebook))
    weakest = min(shares) if shares else None
    text = (f"Median autograded total {format_score(statistics.median(auto))} of "
            f"{format_score(report.auto_max)} over {len(scored)} students")
    if weakest is not None:
        text += f"; lowest autograded share: {weakest[1]} ({weakest[0]:.0%} of its points on average)"
    return text + "."


def properties_figure(report: ClassReport, notebook: str) -> Figure | None:
    """Stacked horizontal bars: per property of the notebook's test cells, students by outcome."""
    rows = [p for p in report.properties if p.notebook == notebook]
    if not rows:
        return None
    labels = [_plain(f"{p.grade_id} · {p.prop}") for p in rows]
    fig, ax = plt.subplots(figsize=(10, 1.8 + 0.32 * len(rows)))
    left = [0] * len(rows)
    y = list(range(len(rows)))[::-1]
    for outcome, (label, colour, hatch) in OUTCOME_STYLE.items():
        widths = [p.outcomes[outcome] for p in rows]
        ax.barh(y, widths, left=left, color=colour, edgecolor="black", hatch=hatch, label=label, height=0.7)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(y, labels, fontsize=7)
    ax.set_xlabel("students")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # Above the bars, so it never hides one.
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=7, ncols=4, frameon=False)
    fig.suptitle(_plain(f"{notebook}: outcome of each property"), fontsize=10)
    fig.tight_layout()
    worst = max(rows, key=lambda p: (sum(v for k, v in p.outcomes.items() if k != "passed"), -rows.index(p)))
    missed = sum(v for k, v in worst.outcomes.items() if k != "passed")
    if missed:
        stubs = f"; {worst.unanswered} more left the stub" if worst.unanswered else ""
        takeaway = (f"Most missed in {notebook}: {worst.prop} ({worst.grade_id}), not passed by {missed} of the "
                    f"{worst.answered} who answered it{stubs}.")
    elif any(p.unanswered for p in rows):
        answered = max(p.answered for p in rows)
        takeaway = (f"Every recorded property of {notebook} passed for the {answered} who answered it; "
                    f"{max(p.unanswered for p in rows)} left the stub.")
    else:
        takeaway = f"Every recorded property of {notebook} passed for every student."
    return Figure(f"properties-{notebook}", f"Properties of {notebook}", takeaway, _png(fig))


def misconceptions_figure(report: ClassReport) -> Figure:
    """Horizontal bars: students per catalogued misconception named at least once, most first."""
    named = [m for m in report.misconceptions if m.count]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.35 * max(1, len(named))))
    if named:
        y = list(range(len(named)))[::-1]
        ax.barh(y, [m.count for m in named], color="#909090", edgecolor="black", hatch="\\\\", height=0.6)
        ax.set_yticks(y, [_plain(f"{m.exercise}: {m.title}") for m in named], fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("students")
    else:
        ax.text(0.5, 0.5, "no catalogued misconception was named", ha="center", va="center")
        ax.axis("off")
    ax.set_title("Catalogued misconceptions named in verdicts (the re-teach list)", fontsize=10)
    fig.tight_layout()
    if named:
        top = named[0]
        takeaway = (f"Re-teach first: {top.title} ({top.exercise}), matched by {top.count} student"
                    f"{'s' if top.count != 1 else ''}; {len(named)} of {len(report.misconceptions)} catalogued "
                    "misconceptions were matched.")
    else:
        takeaway = "No student's answer matched a catalogued misconception."
    return Figure("misconceptions", "Misconceptions", takeaway, _png(fig))


def timing_figure(report: ClassReport, n: int = 10) -> Figure:
    """Horizontal bars: the ``n`` slowest gradings (errors hatched differently)."""
    slow = report.slowest(n)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.35 * max(1, len(slow))))
    if slow:
        y = list(range(len(slow)))[::-1]
        for status, colour, hatch in (("graded", "#c0c0c0", "//"), ("error", "#404040", "xx")):
            picked = [(yy, s) for yy, s in zip(y, slow, strict=True) if s.status == status]
            if picked:
                ax.barh([yy for yy, _ in picked], [s.seconds or 0.0 for _, s in picked], color=colour,
                        edgecolor="black", hatch=hatch, height=0.6, label=status)
        ax.set_yticks(y, [_plain(s.student) for s in slow], fontsize=8)
        ax.set_xlabel("seconds to grade")
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no grading times recorded", ha="center", va="center")
        ax.axis("off")
    ax.set_title("Slowest submissions", fontsize=10)
    fig.tight_layout()
    timed = [s.seconds for s in report.students if s.seconds]
    errors = sum(1 for s in report.students if s.status == "error")
    if slow:
        takeaway = (f"Slowest: {slow[0].student} at {slow[0].seconds:.1f} s (median "
                    f"{statistics.median(timed):.1f} s); {errors} error{'s' if errors != 1 else ''}.")
    else:
        takeaway = f"No grading times recorded; {errors} error{'s' if errors != 1 else ''}."
    return Figure("timing", "Grading time", takeaway, _png(fig))
