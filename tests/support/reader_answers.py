"""Twenty wrong answers read as their students would read the feedback: the readers' corpus and its table.

The corpus (``tests/readers/``) holds wrong answers that are not the catalogue's, each written from a
released notebook's docstring by a student who misread one sentence: ``answers/<name>.py`` is the code the
student appended to the answer cell (a second definition of the function, below the reference's, as
``authoring.submissions.fill`` appends a catalogue entry), and ``manifest.json`` names its notebook, cell,
function and, in one line, what the student did wrong.

:func:`build_class` writes them as a class (``<class>/<name>/ch11/<notebook>.ipynb``: the released notebook
with every answer cell of that notebook solved, the one cell carrying the wrong answer); :func:`grade` grades
it with ``ch11-grade batch``, the path an instructor's class takes; :func:`rows` reads each student's
feedback page: the notebook's score, and for each test cell that lost points the function it checks, its
score and the page's highlighted first line (``<p class="ch11-headline ch11-fix">``).

    .venv/bin/python tests/support/reader_answers.py [--course DIR] [--workers N] [--answers gate|NAME,...]
    .venv/bin/python tests/support/reader_answers.py --graded DIR [--answers gate|NAME,...]

prints the table (one block per answer); ``--graded`` reads a course graded before instead of grading;
``--answers`` keeps the named answers only (``gate``: the first of each exercise, what ``make test`` grades).
``bench/results/reader_first_lines.md`` keeps its output on a given commit, with the first lines judged by hand.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import nbformat
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.course_layout import FEEDBACK
from ch11_autograder.paths import ASSIGNMENT, RELEASE_DIR, REPO_ROOT, SOURCE_DIR

__all__ = ["CORPUS", "CellLine", "ReaderAnswer", "ReaderRow", "answers", "build_class", "grade", "main",
           "render", "rows"]

CORPUS = REPO_ROOT / "tests" / "readers"
_EXERCISE = re.compile(r"ex\d")
_CELL = re.compile(r'<a name="(?P<grade_id>[\w-]+)"></a><div class="panel-heading"><span class="nbgrader-label">'
                   r"Checks of <code>(?P<task>[^<]*)</code></span>\s*<span class=\"pull-right\">\s*"
                   r"Score: (?P<score>[\d.]+) / (?P<points>[\d.]+)")
_HEADLINE = re.compile(r'<p class="ch11-headline [\w-]+">(?P<headline>.*?)</p>', re.S)
_VERDICT = re.compile(r'<div class="ch11-verdict"><pre>(?P<text>.*?)</pre>', re.S)


@dataclass(frozen=True)
class ReaderAnswer:
    """One wrong answer of the corpus (an entry of ``manifest.json``).

    Attributes:
        name: the student's id in the class, and the stem of ``answers/<name>.py``.
        notebook: the notebook's stem (``ex1_fanout``).
        cell: the grade id of the answer cell the code is appended to.
        function: the function the code redefines.
        wrong: what the student did wrong, in one line (the sentence of the contract misread, quoted).
        source: the appended code.
    """

    name: str
    notebook: str
    cell: str
    function: str
    wrong: str
    source: str

    @property
    def exercise(self) -> str:
        found = _EXERCISE.match(self.notebook)
        if found is None:
            raise ValueError(f"{self.name}: notebook {self.notebook!r} is not an exercise's")
        return found.group(0)


@dataclass(frozen=True)
class CellLine:
    """A test cell as the page shows it: its grade id, the function, the score and the highlighted line."""

    grade_id: str
    task: str
    score: float
    points: float
    headline: str


@dataclass(frozen=True)
class ReaderRow:
    """One answer's result: its notebook's autograded score (the test cells', manual cells left out) and the
    test cells that lost points, in notebook order."""

    answer: ReaderAnswer
    score: float
    points: float
    losing: tuple[CellLine, ...]


def answers(corpus: Path = CORPUS) -> list[ReaderAnswer]:
    """The corpus's answers in manifest order.

    Raises:
        ValueError: the manifest names an answer without its file, a notebook or cell that the source
            notebooks lack, or a name twice; or a file in ``answers/`` is not in the manifest.
    """
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    out: list[ReaderAnswer] = []
    for entry in manifest["answers"]:
        path = corpus / "answers" / f"{entry['name']}.py"
        if not path.is_file():
            raise ValueError(f"{corpus / 'manifest.json'}: {entry['name']} has no file {path}")
        notebook = SOURCE_DIR / f"{entry['notebook']}.ipynb"
        if not notebook.is_file():
            raise ValueError(f"{entry['name']}: no source notebook {notebook}")
        if entry["cell"] not in answer_sources(read(notebook)):
            raise ValueError(f"{entry['name']}: {entry['notebook']} has no answer cell {entry['cell']!r}")
        out.append(ReaderAnswer(entry["name"], entry["notebook"], entry["cell"], entry["function"],
                                entry["wrong"], path.read_text(encoding="utf-8")))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{corpus / 'manifest.json'}: a name appears twice in {names}")
    extra = sorted({p.stem for p in (corpus / "answers").glob("*.py")} - set(names))
    if extra:
        raise ValueError(f"{corpus / 'answers'}: not in the manifest: {extra}")
    return out


def gate(corpus: Path = CORPUS) -> tuple[str, ...]:
    """The names of the corpus's first answer of each exercise (manifest order): the sample ``make test`` grades.

    The whole corpus is the ``readers`` tier (``make test-readers``): grading all twenty answers costs minutes of
    CI that one answer per exercise does not, and the sample still runs every exercise's pages through the script.
    """
    first: dict[str, str] = {}
    for answer in answers(corpus):
        first.setdefault(answer.exercise, answer.name)
    return tuple(first.values())


def _chosen(corpus: Path, names: Collection[str] | None) -> list[ReaderAnswer]:
    """The corpus's answers, only those named in ``names`` when given (manifest order).

    Raises:
        ValueError: ``names`` holds a name the manifest does not.
    """
    every = answers(corpus)
    if names is None:
        return every
    unknown = sorted(set(names) - {a.name for a in every})
    if unknown:
        raise ValueError(f"{corpus / 'manifest.json'}: no answer named {unknown}")
    return [a for a in every if a.name in names]


def build_class(dest: Path, corpus: Path = CORPUS, names: Collection[str] | None = None) -> Path:
    """Write the corpus (or its answers in ``names``) as a class under ``dest`` (one student per answer, one
    notebook each)."""
    for answer in _chosen(corpus, names):
        solved = answer_sources(read(SOURCE_DIR / f"{answer.notebook}.ipynb"))
        solved[answer.cell] = "\n\n\n".join([solved[answer.cell].rstrip(), answer.source.rstrip() + "\n"])
        nb = fill(read(RELEASE_DIR / f"{answer.notebook}.ipynb"), solved)
        target = dest / answer.name / ASSIGNMENT / f"{answer.notebook}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
    return dest


def grade(klass: Path, course: Path, workers: int = 2) -> None:
    """Grade ``klass`` into ``course`` with ``ch11-grade batch`` (a new process, as an instructor runs it).

    Raises:
        RuntimeError: the batch exited non-zero (its output is in the message).
    """
    cli = Path(sys.executable).with_name("ch11-grade")
    done = subprocess.run([str(cli), "batch", str(klass), "--course", str(course), "--workers", str(workers)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ch11-grade batch exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def rows(course: Path, corpus: Path = CORPUS, names: Collection[str] | None = None) -> list[ReaderRow]:
    """Each answer's (or each in ``names``) autograded score and losing cells, read from its feedback page in
    ``course``.

    Raises:
        ValueError: a page is missing or shows no autograded test cell (the batch did not grade it).
    """
    out = []
    for answer in _chosen(corpus, names):
        page_path = course / FEEDBACK / answer.name / ASSIGNMENT / f"{answer.notebook}.html"
        if not page_path.is_file():
            raise ValueError(f"{answer.name}: no feedback page {page_path}")
        cells = _test_cells(page_path.read_text(encoding="utf-8"))
        if not cells:
            raise ValueError(f"{answer.name}: {page_path} shows no autograded test cell")
        out.append(ReaderRow(answer, round(sum(c.score for c in cells), 2), sum(c.points for c in cells),
                             tuple(c for c in cells if c.score < c.points)))
    return out


def _test_cells(page: str) -> list[CellLine]:
    """Every autograded test cell of a page: its function, score and first highlighted line (for a verdict the
    page could not split, its first line)."""
    headings = list(_CELL.finditer(page))
    cells = []
    for number, heading in enumerate(headings):
        end = headings[number + 1].start() if number + 1 < len(headings) else len(page)
        body = page[heading.end():end]
        shaped, whole = _HEADLINE.search(body), _VERDICT.search(body)
        first = shaped["headline"] if shaped else (whole["text"].split("\n")[0] if whole else "")
        cells.append(CellLine(heading["grade_id"], html.unescape(heading["task"]), float(heading["score"]),
                              float(heading["points"]), html.unescape(first)))
    return cells


def render(table: list[ReaderRow]) -> str:
    """The table as text: per answer, its exercise, what the student did wrong, its score, and each losing
    cell's function, score and first highlighted line."""
    blocks = []
    for number, row in enumerate(table, start=1):
        lines = [f"{number:2d}. {row.answer.exercise} {row.answer.name} ({row.answer.function})",
                 f"    wrong: {row.answer.wrong}",
                 f"    autograded score: {row.score:g} / {row.points:g}"]
        lines.extend(f"    {cell.task} ({cell.score:g} / {cell.points:g}): {cell.headline}" for cell in row.losing)
        if not row.losing:
            lines.append("    (no cell lost points)")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--course", type=Path, default=None,
                        help="course to grade into (a new one under a temporary folder by default)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--graded", type=Path, default=None,
                        help="a course the corpus was graded into already: print its table without grading")
    parser.add_argument("--answers", default=None,
                        help="comma-separated answer names: only these (all twenty by default; --answers gate for "
                             "the first answer of each exercise)")
    args = parser.parse_args(argv)
    names = None if args.answers is None else gate() if args.answers == "gate" else args.answers.split(",")
    if args.graded is not None:
        print(render(rows(args.graded, names=names)))
        return 0
    with tempfile.TemporaryDirectory(prefix="ch11-readers-") as scratch:
        course = args.course or Path(scratch) / "course"
        klass = build_class(Path(scratch) / "class", names=names)
        grade(klass, course, args.workers)
        print(render(rows(course, names=names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
