"""The class report as files: ``reports/<assignment>-report.html``, ``.md``, its PNGs and
``reports/<assignment>-mistakes.json``.

One list of blocks (headings, paragraphs, tables, figures) is rendered twice, so the
HTML and the Markdown say the same. The HTML is self-contained: inline CSS, figures as
``data:image/png;base64`` URIs, no script, no link to fetch. Every piece of text goes through
one rule first, ``textsafe.escape`` (newlines, control, bidi and zero-width characters shown as
visible escapes, so each text is one line), then is escaped for its format (``html.escape``; in
Markdown, every character that could start markup is backslash-escaped), because student ids,
counterexamples, exception names and error causes come from submissions.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..batch.course import REPORTS_DIR
from ..batch.records import format_score
from ..batch.report import write_atomically
from ..textsafe import escape, escape_html
from .data import ClassReport, describe
from .figures import Figure, draw_all
from .mistakes import ClassMistake, mistakes_json, mistakes_path, shown_example
from .similarity import Similarity, similarity_json

__all__ = ["ReportFiles", "html_text", "markdown_text", "report_blocks", "write_report"]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Plot:
    figure: Figure
    filename: str


@dataclass(frozen=True)
class SideBySide:
    """Two excerpts of code shown next to each other (HTML) or one after the other (Markdown); ``marked``
    holds, per side, the 1-based numbers of the lines to mark."""

    titles: tuple[str, str]
    lines: tuple[tuple[str, ...], tuple[str, ...]]
    marked: tuple[tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class Contents:
    """Links to the report's sections (its level-2 headings), in order."""

    headings: tuple[str, ...]


Block = Heading | Para | Table | Plot | SideBySide | Contents


def anchor(text: str) -> str:
    """The id of a heading's section: its words, lower case, joined by ``-`` (GitHub's Markdown does the same
    for these headings, which hold letters, digits, spaces and ``:()``)."""
    return "-".join("".join(c for c in text.lower() if c.isalnum() or c in " -_").split())


@dataclass(frozen=True)
class ReportFiles:
    """Where :func:`write_report` wrote: the HTML, the Markdown, the PNGs (in figure order), the mistake
    groups' JSON and the similarity evidence as JSON (``None`` when it could not be computed)."""

    html: Path
    markdown: Path
    pngs: tuple[Path, ...]
    mistakes: Path | None = None
    similarity: Path | None = None


def _pts(value: float | None) -> str:
    return "-" if value is None else format_score(value)


def report_blocks(report: ClassReport, figures: Sequence[Figure], stem: str) -> list[Block]:
    """The report's content in order; ``stem`` names the PNG files (``<stem>-<figure>.png``)."""
    plots = {f.name: Plot(f, f"{stem}-{f.name}.png") for f in figures}
    scored = report.scored
    blocks: list[Block] = [
        Heading(f"Class report: {report.assignment}", 1),
        Para(f"{len(report.students)} students: {len(scored)} with scores in the gradebook, "
             f"{sum(s.status == 'error' for s in report.students)} whose last grading failed. Points possible: "
             f"{format_score(report.auto_max)} autograded, {format_score(report.manual_max)} graded by hand."),
        *summary_blocks(report),
        Heading("Scores"),
    ]
    if "scores" in plots:
        blocks.append(plots["scores"])
    stats = []
    for nb in report.notebooks:
        auto = describe([(s.auto or {}).get(nb.notebook, 0.0) for s in scored])
        stats.append((nb.notebook, format_score(nb.auto_max), *(_stat(auto, k) for k in ("mean", "median", "min",
                                                                                           "max"))))
    total = describe([s.auto_total or 0.0 for s in scored])
    stats.append(("autograded total", format_score(report.auto_max),
                  *(_stat(total, k) for k in ("mean", "median", "min", "max"))))
    blocks.append(Para("Over every student with scores, those who left a task unanswered included (the summary "
                       "above counts only those who attempted it). Each student's points: the appendix."))
    blocks.append(Table(("notebook", "autograded max", "mean", "median", "min", "max"), tuple(stats)))
    names = [nb.notebook for nb in report.notebooks]
    per_student: list[Block] = [
        Heading(APPENDIX_STUDENTS),
        Para("Per student: autograded points per notebook (manual overrides of test cells count), "
             "hand marks entered so far, rubric points still to mark, and the total of both."),
        Table(
            ("student", "status", *names, "autograded", "hand marked", "pending by hand", "total"),
            tuple((s.student, s.status,
                   *(_pts((s.auto or {}).get(n)) if s.auto is not None else "-" for n in names),
                   _pts(s.auto_total), format_score(s.manual_total), format_score(s.manual_pending), _pts(s.total))
                  for s in report.students),
        ),
    ]
    blocks.append(Heading("Test cells and properties"))
    blocks.append(Para("Students per outcome of each property of each autograded test cell, from the verdicts "
                       "the grader recorded. visible_checks counts only students whose visible checks failed "
                       "(a passing visible check is no property)."))
    blocks += [plots[f"properties-{nb.notebook}"] for nb in report.notebooks if f"properties-{nb.notebook}" in plots]
    blocks.append(Para("Students who left a task's stub (NotImplementedError) are counted apart, as not "
                       "answered, never as failing."))
    blocks.append(Table(("notebook", "test cell", "property", "passed", "failed", "errored", "timed out",
                         "not answered (stub)"),
                        tuple((p.notebook, p.grade_id, p.prop, *(str(v) for v in p.outcomes.values()),
                               str(p.unanswered)) for p in report.properties)))
    blocks.append(Heading("Misconceptions: the re-teach list"))
    blocks.append(Para("Students whose verdicts named each catalogued wrong answer (once per student), most first, "
                       "with the catalogue's advice. Entry '-' is a name a suite gives to several catalogue entries "
                       "whose answers cannot be told apart."))
    if "misconceptions" in plots:
        blocks.append(plots["misconceptions"])
    matched = [m for m in report.misconceptions if m.count]
    unmatched = [m for m in report.misconceptions if not m.count]
    if matched:
        blocks.append(Table(("students", "exercise", "misconception", "entry", "advice"),
                            tuple((str(m.count), m.exercise, m.title, m.name or "-", m.advice) for m in matched)))
    if unmatched:
        blocks.append(Para(f"Catalogued but matched by no student ({len(unmatched)}):"))
        blocks.append(Table(("students", "exercise", "misconception", "entry"),
                            tuple(("0", m.exercise, m.title, m.name or "-") for m in unmatched)))
    blocks += mistake_blocks(report.mistakes)
    blocks.append(Heading("Slowest submissions, errors and late flags"))
    if "timing" in plots:
        blocks.append(plots["timing"])
    blocks.append(Table(("student", "status", "seconds"),
                        tuple((s.student, s.status, f"{s.seconds:.1f}") for s in report.slowest(10))))
    if report.flags:
        blocks.append(Table(("student", "flag", "cause"), tuple((f.student, f.kind, f.cause) for f in report.flags)))
    else:
        blocks.append(Para("No errors and no late flags."))
    similar, appendix = similarity_blocks(report.similarity)
    blocks += similar
    if report.notes:
        blocks.append(Heading("Notes"))
        blocks += [Para(note) for note in report.notes]
    blocks += per_student + appendix
    contents = Contents(tuple(b.text for b in blocks if isinstance(b, Heading) and b.level == 2
                              and b.text != SUMMARY))
    at = blocks.index(Heading(SUMMARY)) + 1
    return [*blocks[:at], contents, *blocks[at:]]


SUMMARY = "Summary"
APPENDIX_STUDENTS = "Appendix: scores per student"
APPENDIX_SIMILAR = "Appendix: similar answers side by side"
#: Mistakes in the summary's re-teach list.
RETEACH = 3


def summary_blocks(report: ClassReport) -> list[Block]:
    """The report's first screen: who attempted each notebook and task (answered, not the released stub), the
    scores of those who did, and the mistakes to re-teach first. The contents list follows it."""
    scored = report.scored
    blocks: list[Block] = [Heading(SUMMARY)]
    rows = []
    for nb in report.notebooks:
        if not any(a.notebook == nb.notebook for a in report.attempts):
            continue
        who = report.attempted(nb.notebook)
        stats = report.attempted_scores(nb.notebook)
        rows.append((nb.notebook, f"{len(who)} of {len(scored)}", format_score(nb.auto_max),
                     *(_stat(stats, k) if who else "-" for k in ("mean", "median", "min", "max"))))
    if rows:
        blocks.append(Para("Attempted: students who answered at least one task of the notebook (not the released "
                           "stub). Scores: autograded points of those students only."))
        blocks.append(Table(("notebook", "attempted", "points possible", "mean", "median", "min", "max"),
                            tuple(rows)))
        blocks.append(Table(("notebook", "task (test cell)", "answered", "left the stub"),
                            tuple((a.notebook, a.grade_id, str(len(a.attempted)), str(len(a.stubs)))
                                  for a in report.attempts)))
    reteach = report.reteach(RETEACH)
    if reteach:
        which = "the largest mistake group" if len(reteach) == 1 else f"the {len(reteach)} largest mistake groups"
        blocks.append(Para(f"Re-teach this week: {which} (students who fail the same way on the same inputs), with "
                           "one student's counterexample each."))
        blocks.append(Table(("students", "mistake", "task (test cell)", "input", "expected", "obtained", "advice"),
                            tuple((str(r.students), r.title, r.cell, r.input, r.expected, r.obtained,
                                   r.advice or "not catalogued: read the counterexample")
                                  for r in reteach)))
    else:
        blocks.append(Para("No mistake to re-teach: no answer lost points."))
    return blocks


#: Student ids shown per group in the report (the JSON lists every one).
SHOWN_STUDENTS = 12


def _who(students: Sequence[str]) -> str:
    shown = ", ".join(students[:SHOWN_STUDENTS])
    return shown + (f" and {len(students) - SHOWN_STUDENTS} more" if len(students) > SHOWN_STUDENTS else "")


def mistake_blocks(mistakes: Sequence[ClassMistake]) -> list[Block]:
    """The section "Mistakes not in the catalogue": every group, largest first, each said catalogued or not."""
    new = [m for m in mistakes if not m.known]
    blocks: list[Block] = [
        Heading("Mistakes not in the catalogue"),
        Para(f"Students whose answers fail the same properties on the same inputs with the same values, grouped "
             f"({len(mistakes)} groups, {len(new)} not in the catalogue), largest first. A student who makes two "
             "mistakes is in both groups; answers that lose no points and tasks not answered are in no group. "
             "Each group shows one student's counterexample (input, expected, obtained). "
             f"The same data: {REPORTS_DIR}/<assignment>-mistakes.json; ch11-grade catalogue draft --group <id> "
             "turns a group into a draft catalogue entry."),
    ]
    if not mistakes:
        blocks.append(Para("No failing answer."))
        return blocks
    rows = []
    for index, mistake in enumerate(mistakes):
        group = mistake.group
        given, expected, obtained = shown_example(group)
        props = "; ".join(f"{cell}: {prop}" for cell, prop in group.properties)
        if mistake.entry is not None:
            known = f"catalogued: {mistake.entry.name}"
        elif mistake.outside:
            known = (f"not catalogued (named in feedback: {group.named}, which loses no points in "
                     f"{', '.join(mistake.outside)})")
        elif group.named:
            known = f"named in feedback: {group.named}"
        else:
            known = "not catalogued"
        rows.append((f"{index} ({group.id})", str(len(group.students)), _who(group.students), props,
                     given, expected, obtained, known))
    blocks.append(Table(("group", "students", "who", "cells: properties", "input", "expected", "obtained",
                         "catalogue"), tuple(rows)))
    return blocks


#: Pairs shown in the report; the JSON beside it holds them all.
MAX_PAIRS_SHOWN = 25


def similarity_blocks(similarity: Similarity | None) -> tuple[list[Block], list[Block]]:
    """The section "Similar answers" (pairs of students with near-identical answer cells, one row each,
    :mod:`.similarity`) and its appendix (the two answers side by side). Evidence for the instructor, worded
    as such."""
    blocks: list[Block] = [Heading("Similar answers (evidence, not a verdict)")]
    if similarity is None:
        return [*blocks, Para("Not computed: see the notes.")], []
    blocks.append(Para(
        f"Pairs of students whose answers to a cell are near-identical (at least {similarity.threshold:.0%} of "
        "their fingerprints in common) once the released stub, its docstring, the reference solution and "
        "ways of writing it that many students share are set aside; names, strings, comments and layout do "
        f"not count. {similarity.answers} answers in {similarity.cells} cells compared. Short or guided "
        "answers converge and students may have worked together as the course allows: read the two "
        f"answers (section \"{APPENDIX_SIMILAR}\") before drawing any conclusion. This report is for "
        "the instructor; it is never published to students."))
    appendix: list[Block] = []
    if not similarity.pairs:
        blocks.append(Para("No pair of students has near-identical answers in any cell."))
    else:
        blocks.append(Table(("students", "cells", "highest similarity"),
                            tuple((f"{p.students[0]} and {p.students[1]}", ", ".join(c.grade_id for c in p.cells),
                                   f"{max(c.similarity for c in p.cells):.0%}")
                                  for p in similarity.pairs[:MAX_PAIRS_SHOWN])))
        appendix.append(Heading(APPENDIX_SIMILAR))
        appendix.append(Para("Marked lines (▶) hold what the two answers share."))
    for pair in similarity.pairs[:MAX_PAIRS_SHOWN]:
        a, b = pair.students
        appendix.append(Heading(f"{a} and {b}: {len(pair.cells)} cell{'s' if len(pair.cells) != 1 else ''}", 3))
        appendix.append(Table(("notebook", "cell", "similarity", "fingerprints shared", f"own: {a}", f"own: {b}"),
                              tuple((c.notebook, c.grade_id, f"{c.similarity:.0%}", str(c.shared), str(c.own[0]),
                                     str(c.own[1])) for c in pair.cells)))
        for cell in pair.cells:
            left, right = cell.excerpts
            appendix.append(SideBySide((_side_title(left.student, cell.grade_id, left.cut),
                                        _side_title(right.student, cell.grade_id, right.cut)),
                                       (left.lines, right.lines), (left.shared, right.shared)))
    if len(similarity.pairs) > MAX_PAIRS_SHOWN:
        blocks.append(Para(f"{len(similarity.pairs) - MAX_PAIRS_SHOWN} more pairs in the similarity JSON."))
    if similarity.rare_groups:
        blocks.append(Para("Pairs of students who are the only ones (or nearly) to fail in the same way:"))
        blocks.append(Table(("students", "failure group", "students in the group"),
                            tuple((" and ".join(g.students), g.group, str(g.size)) for g in similarity.rare_groups)))
    return blocks, appendix


def _side_title(student: str, grade_id: str, cut: bool) -> str:
    return f"{student}, {grade_id}" + (" (first lines only)" if cut else "")


def _stat(values: dict[str, float], key: str) -> str:
    return f"{values[key]:.2f}" if key == "mean" else format_score(values[key])


# --------------------------------------------------------------------------- Markdown

#: Characters that can start inline markup, links, HTML, entities or a table cell. Digits, ``.`` and ``-``
#: stay plain (no block starts with student text, so list markers cannot form).
#: An underscore inside a word (``ex1_fanout``) starts no emphasis in CommonMark, so only one at a word's
#: edge is escaped: the text stays readable as plain text.
_MD_SPECIAL = re.compile(r"([\\`*{}\[\]<>#!|~&]|(?<!\w)_|_(?!\w))")


def md_escape(text: str) -> str:
    """``text`` as literal Markdown inline text: first the one rule for text on its way to a reader
    (:func:`ch11_autograder.textsafe.escape`: newlines, tabs, control, bidi and zero-width characters as
    visible escapes, one line), then markup characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", escape(text))


def markdown_text(blocks: Sequence[Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + md_escape(block.text), ""]
        elif isinstance(block, Contents):
            lines += [*(f"- [{md_escape(h)}](#{anchor(h)})" for h in block.headings), ""]
        elif isinstance(block, Para):
            lines += [md_escape(block.text), ""]
        elif isinstance(block, Table):
            lines.append("| " + " | ".join(md_escape(h) for h in block.headers) + " |")
            lines.append("|" + "|".join("---" for _ in block.headers) + "|")
            lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, SideBySide):
            for title, code, marked in zip(block.titles, block.lines, block.marked, strict=True):
                lines += [md_escape(title), "", *_md_code(code, marked), ""]
        else:
            lines += [f"![{md_escape(block.figure.title)}]({block.filename})", "",
                      f"*{md_escape(block.figure.takeaway)}*", ""]
    return "\n".join(lines)


def _md_code(code: Sequence[str], marked: Sequence[int]) -> list[str]:
    """A fenced code block longer than any run of backticks in ``code`` (so no line can close it), each line
    prefixed with ``▶ `` when marked and two spaces otherwise."""
    fence = "`" * max(3, 1 + max((len(run) for line in code for run in re.findall(r"`+", line)), default=0))
    rows = [f"{'▶ ' if n in set(marked) else '  '}{escape(line)}" for n, line in enumerate(code, 1)]
    return [fence, *rows, fence]


# --------------------------------------------------------------------------- HTML

_CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #111; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #888; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #e8e8e8; }
figure { margin: 1em 0; }
figcaption { font-style: italic; }
img { max-width: 100%; }
table.side td { width: 50%; }
pre { margin: 0; font-size: 0.9em; white-space: pre-wrap; }
mark { background: #ffe08a; }
"""


def html_text(blocks: Sequence[Block]) -> str:
    esc = escape_html  # the same visible text as the Markdown's
    title = next((b.text for b in blocks if isinstance(b, Heading)), "Class report")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             # No script, no remote fetch: the page opens offline and runs nothing.
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
             "style-src 'unsafe-inline'\">",
             f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>"]
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f'<h{block.level} id="{esc(anchor(block.text))}">{esc(block.text)}</h{block.level}>')
        elif isinstance(block, Contents):
            parts.append("<nav><ul>" + "".join(f'<li><a href="#{esc(anchor(h))}">{esc(h)}</a></li>'
                                               for h in block.headings) + "</ul></nav>")
        elif isinstance(block, Para):
            parts.append(f"<p>{esc(block.text)}</p>")
        elif isinstance(block, Table):
            parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in block.headers)
                         + "</tr></thead><tbody>")
            parts += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in block.rows]
            parts.append("</tbody></table>")
        elif isinstance(block, SideBySide):
            sides = []
            for code, marked in zip(block.lines, block.marked, strict=True):
                rows = [f"<mark>{esc(line)}</mark>" if n in set(marked) else esc(line)
                        for n, line in enumerate(code, 1)]
                sides.append("<td><pre>" + "\n".join(rows) + "</pre></td>")
            parts.append('<table class="side"><thead><tr>' + "".join(f"<th>{esc(t)}</th>" for t in block.titles)
                         + "</tr></thead><tbody><tr>" + "".join(sides) + "</tr></tbody></table>")
        else:
            data = base64.b64encode(block.figure.png).decode("ascii")
            parts.append(f'<figure><img alt="{esc(block.figure.title)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{esc(block.figure.takeaway)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(course: Path, assignment: str, report: ClassReport) -> ReportFiles:
    """Draw the figures and write the HTML, the Markdown and the PNGs into ``<course>/reports/``."""
    stem = f"{assignment}-report"
    figures = draw_all(report)
    blocks = report_blocks(report, figures, stem)
    out = course / REPORTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    pngs = []
    for block in blocks:
        if isinstance(block, Plot):
            path = out / block.filename
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(block.figure.png)
            tmp.replace(path)
            pngs.append(path)
    markdown = out / f"{stem}.md"
    page = out / f"{stem}.html"
    groups = mistakes_path(course, assignment)
    write_atomically(markdown, markdown_text(blocks))
    write_atomically(page, html_text(blocks))
    write_atomically(groups, json.dumps(mistakes_json(report.mistakes), indent=1, ensure_ascii=True) + "\n")
    similar = None
    if report.similarity is not None:
        similar = out / f"{assignment}-similarity.json"
        write_atomically(similar, similarity_json(report.similarity))
    return ReportFiles(page, markdown, tuple(pngs), groups, similar)
