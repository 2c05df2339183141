"""A verdict as the student's feedback page shows it: the first line highlighted, passed checks folded.

``TrustedVerdicts`` writes each autograded test cell's verdict as text (:meth:`.verdicts.CellVerdict.message`),
which nbgrader scores and Gradescope shows as it is. Its layout is fixed and every student value in it
is one escaped line (``textsafe.one_line``; a multi-row array continues on lines that start with a
space), so a line that starts with ``[pass]`` or ``[FAIL]`` is the grader's own:

    <headline>                     full marks, the first thing to fix, or "not answered yet"
    <summary>                      "3 of 5 checks passed (2.4 / 4 points)."
    [NOT ANSWERED] ... | [FAIL] ... (indented details follow each)
    [pass] ...

:func:`read_verdict_text` splits it into :class:`VerdictSections`; :func:`verdict_html` renders them
(``<``, ``>`` and ``&`` HTML-escaped; the text holds no markup): the headline in a highlighted
paragraph, the failures in full, and the passed checks inside a closed ``<details>``. Text of another
shape (a cell that could not be graded) is shown whole, unhighlighted. :func:`notebook_line` is the one
line at the top of the page.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from .verdicts import FIRST_TO_FIX, FULL_MARKS, NOT_ANSWERED_ERROR

__all__ = [
    "VerdictSections",
    "all_passed_line",
    "cell_line",
    "not_answered_short",
    "notebook_line",
    "read_verdict_text",
    "verdict_html",
    "verdict_text",
]

_SUMMARY = re.compile(r"\d+ of \d+ checks passed \(\S+ / \S+ points\)\.")
_BLOCK_STARTS = ("[FAIL] ", "[NOT ANSWERED] ")
_NOT_ANSWERED = ("[NOT ANSWERED] ", "[FAIL] not answered yet: ")


@dataclass(frozen=True)
class VerdictSections:
    """One cell's verdict text, split.

    Attributes:
        headline: the first line; ``""`` when the text is not a verdict of the documented shape.
        full: whether the headline is full marks.
        summary: the "N of M checks passed" line (``""`` when absent).
        failures: each failed check's block (its ``[FAIL]`` line and its indented details), in order.
        passes: the ``[pass]`` lines.
        whole: the text as written, for text of another shape.
    """

    headline: str
    full: bool
    summary: str
    failures: tuple[str, ...]
    passes: tuple[str, ...]
    whole: str

    @property
    def shaped(self) -> bool:
        return bool(self.headline)


def verdict_text(cell: Any) -> str:
    """The verdict text ``TrustedVerdicts`` wrote into an autograded test cell's outputs: its stream, or its
    ``error``'s value (the partial score's ``execute_result`` is the number nbgrader reads, not text)."""
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(str(output.get("text", "")))
        elif kind == "error":
            parts.append(str(output.get("evalue", "")))
    return "".join(parts)


def read_verdict_text(text: str) -> VerdictSections:
    """``text`` (a cell's verdict as ``TrustedVerdicts`` wrote it) split into its sections."""
    lines = text.rstrip("\n").split("\n")
    first = lines[0] if lines else ""
    if not first.startswith((FULL_MARKS, FIRST_TO_FIX, *_NOT_ANSWERED)):
        return VerdictSections("", False, "", (), (), text)
    rest = lines[1:]
    summary = rest.pop(0) if rest and _SUMMARY.fullmatch(rest[0]) else ""
    failures: list[list[str]] = []
    passes: list[str] = []
    for line in rest:
        if line.startswith("[pass] "):
            passes.append(line)
        elif line.startswith(_BLOCK_STARTS) or not failures:
            failures.append([line])
        else:
            failures[-1].append(line)
    return VerdictSections(first, first.startswith(FULL_MARKS), summary,
                           tuple("\n".join(block) for block in failures), tuple(passes), text)


def _checks(count: int) -> str:
    return f"{count} check{'s' if count != 1 else ''}"


def verdict_html(sections: VerdictSections) -> str:
    """The HTML of one cell's verdict (see the module docstring); every character of the text escaped."""
    def esc(text: str) -> str:  # text content: <, > and & are all that must be escaped; quotes read as written
        return html.escape(text, quote=False)

    if not sections.shaped:
        return f'<div class="ch11-verdict"><pre>{esc(sections.whole)}</pre></div>'
    mark = "ch11-full" if sections.full else "ch11-fix"
    parts = [f'<div class="ch11-verdict"><p class="ch11-headline {mark}">{esc(sections.headline)}</p>']
    if sections.summary:
        parts.append(f'<p class="ch11-summary">{esc(sections.summary)}</p>')
    # The not-answered line is the headline itself when the whole task is unanswered: not repeated.
    failures = [block for block in sections.failures if block != sections.headline]
    if failures:
        parts.append(f'<pre class="ch11-failures">{esc(chr(10).join(failures))}</pre>')
    if sections.passes:
        parts.append(f"<details><summary>{_checks(len(sections.passes))} passed</summary>"
                     f'<pre class="ch11-passes">{esc(chr(10).join(sections.passes))}</pre></details>')
    parts.append("</div>")
    return "".join(parts)


def notebook_line(headlines: list[tuple[str, VerdictSections]], score: float, points: float) -> tuple[str, bool]:
    """The page's first line and whether it is full marks: ``Every autograded check passed: 10 / 10`` when
    every cell has full marks, else the first cell's headline that is not (``headlines``: (task, sections)
    in notebook order; ``score`` and ``points``: the notebook's autograded points)."""
    if headlines and all(sections.full for _task, sections in headlines):
        return all_passed_line(score, points), True
    for task, sections in headlines:
        if sections.full:
            continue
        return f"Autograded points: {score:g} / {points:g}. {cell_line(task, sections)}", False
    return "", False


def all_passed_line(score: float, points: float) -> str:
    """The one line at the top of a correct notebook's page (feedback, practice, Gradescope)."""
    return f"Every autograded check passed: {score:g} / {points:g}"


def not_answered_short(task: str) -> str:
    """A task whose stub still raises, in the one line at the top of a page."""
    return f"{task}: not answered yet (it still raises {NOT_ANSWERED_ERROR})."


def cell_line(task: str, sections: VerdictSections) -> str:
    """A cell that is not at full marks, as the line at the top of a page says it: its headline (the first
    thing to fix), a task not answered yet in short, or that it could not be graded."""
    if not sections.shaped:
        return f"{task}: could not be graded; see its cell below."
    if sections.headline.startswith(_NOT_ANSWERED):
        return not_answered_short(task)
    return sections.headline
