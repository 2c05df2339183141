"""The hostile corpus graded next to the honest demo class: no attack gains anything.

One session-scoped batch run per backend (``grade_class(..., workers=2)``) grades the
honest class (``demo/class``) and the hostile corpus (``support/hostile_corpus.py``) together into a
fresh course, and feeds every per-case assertion:

* each case meets its :class:`hostile_corpus.Expect` (points, graded or recorded error, checks);
* each honest student's gradebook rows, recorded the moment they were merged (*before*
  the rest of the corpus was), are unchanged at the end (*after*), and each honest
  student scores what the demo class defines (no interference while graded side by side).

The backend is bwrap (the default), and the Docker path (``run_in_docker``, the whole
batch in the grading image, student code as slot users) when an engine is reachable:
skipped otherwise, a failure when ``$CI`` is set. The Docker run's *before* rows are the
bwrap run's (grading is deterministic).

Each expectation is shown to be able to fail: ``test_attack_works_without_the_defence``
grades a sample of cases with the kernel and worker unsandboxed (``CH11_SANDBOX=none``)
or with plain nbgrader (its own Execute, no trusted verdicts, no sanitizing) and checks
that the attack then succeeds. The fast tests at the end check the corpus itself
(every payload compiles, the table and docs/hostile.md agree).

Set ``CH11_HOSTILE_OBSERVED=<path>`` (``{backend}`` in it is replaced) to write the
observed outcomes as JSON (what docs/hostile.md's "observed" column is made from), and
``CH11_HOSTILE_CASES=name,...`` to grade only those cases with the honest class (the
other cases' tests are skipped).
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest
from nbgrader.api import Gradebook
from support import batch_support
from support.hostile_corpus import (
    ASSIGNMENT,
    CASES,
    CHECKS,
    GRADED,
    NOTEBOOK_POINTS,
    Case,
    Context,
    build_corpus,
    render_table,
)
from support.paths import DEMO_CLASS_DIR, DOCS_DIR, SOURCE_DIR

HONEST = ("ada", "blank", "hal", "lin")
DOCS = DOCS_DIR / "hostile.md"
TOLERANCE = 1e-6

#: Bounds the disk checks hold payloads to.
MAX_FILE_BYTES = 64 * 1024**2  # untrusted.launch.Limits.max_file_bytes
MAX_TMP_BYTES = 256 * 1024**2  # bwrap's /tmp tmpfs
MAX_SCRATCH_BYTES = 256 * 1024**2  # what one submission may leave on the host disk
MAX_FEEDBACK_BYTES = 20 * 1024**2

#: Text that must never reach a student: the hidden test region and secret sources.
HIDDEN_REGION_TEXT = "hidden checks run outside this notebook"
SECRET_SNIPPETS = (
    "SQLite format 3",  # gradebook.db bytes
    "Exercise 1: a third child at the shared node.",  # ch11_solutions/ex1_fanout.py docstring
    "exact memory cost spend on feature maps",  # the Exercise 4 key's rationale
)


# --------------------------------------------------------------------------- the listener


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection (payloads try to call home)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="hostile-listener", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(1)
                data = b""
                with contextlib.suppress(OSError):
                    data = conn.recv(4096)
                self.received.append(data or b"(connected)")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


# --------------------------------------------------------------------------- running a batch


@dataclass
class Run:
    """One graded course and everything the per-case tests read from it."""

    backend: str
    course: Path
    ctx: Context
    records: dict[str, Any]
    before: dict[str, dict]
    after: dict[str, dict]
    scores: dict[str, dict[str, float]]
    listener: Listener
    seconds: dict[str, float] = field(default_factory=dict)

    def feedback(self, student: str, notebook: str) -> str:
        path = self.course / "feedback" / student / ASSIGNMENT / f"{notebook}.html"
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    def autograded(self, student: str, notebook: str) -> Path:
        return self.course / "autograded" / student / ASSIGNMENT / f"{notebook}.ipynb"


def gradebook_scores(course: Path) -> dict[str, dict[str, float]]:
    """Student -> notebook -> autograded points as the instructor's gradebook shows them.

    ``Grade.score`` of the autograded test cells counts manual overrides and extra
    credit, and extra credit on any other cell is added too, so a payload that wrote
    either into the gradebook shows up here.
    """
    from ch11_autograder.batch.merge import autograded_cells

    out: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        auto = autograded_cells(gb, ASSIGNMENT)
        for sub in gb.assignment_submissions(ASSIGNMENT):
            per = {}
            for nb in sub.notebooks:
                cells = auto.get(nb.name, {})
                per[nb.name] = round(sum(g.score if g.name in cells else (g.extra_credit or 0.0)
                                         for g in nb.grades), 6)
            out[sub.student.id] = per
    return out


def honest_rows(course: Path) -> dict[str, dict]:
    """The honest students' grade rows: (notebook, cell) -> (auto, manual, extra credit, needs manual)."""
    out: dict[str, dict] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for sub in gb.assignment_submissions(ASSIGNMENT):
            if sub.student.id not in HONEST:
                continue
            out[sub.student.id] = {
                (nb.name, g.name): (g.auto_score, g.manual_score, g.extra_credit, bool(g.needs_manual_grade))
                for nb in sub.notebooks
                for g in nb.grades
            }
    return out


def copy_class(dest: Path, students: tuple[str, ...] = HONEST) -> None:
    for student in students:
        shutil.copytree(DEMO_CLASS_DIR / student, dest / student)


#: Seconds the batch may spend on one submission in these tests (the honest ones take about 80 s).
SUBMISSION_TIMEOUT = 300.0

#: Appended to the course config of every graded run here: the shipped limits
#: (``nbgrader_config.py``: 60 s a cell, 10 s a call, 900 s a notebook) made the cases that
#: hang on purpose cost minutes each. Honest work stays well inside these: its slowest cell,
#: lin's Exercise 3 figure (her scan over every k builds the default 4081-depth table), takes
#: 10.5 s on a quiet machine, and the suites' slowest call well under a second. As in the
#: shipped defaults, one worker cell's limit stays well below the worker's start-up budget,
#: so that one looping cell costs only itself.
TEST_LIMITS = """
# hostile tests: tighter limits, so that payloads that hang cost seconds
c.SandboxedExecute.timeout = 30
c.SandboxedExecute.wall_seconds = 240.0
c.TrustedVerdicts.call_timeout = 3.0
c.TrustedVerdicts.cell_time_limit = 6.0
c.TrustedVerdicts.startup_timeout = 25.0
"""


#: Comma-separated case names: grade only these with the honest class (all when unset), to run single cases.
CASES_ENV = "CH11_HOSTILE_CASES"


def selected_cases() -> tuple[Case, ...]:
    """The cases named in ``$CH11_HOSTILE_CASES``, or every case."""
    names = {n.strip() for n in os.environ.get(CASES_ENV, "").split(",") if n.strip()}
    unknown = names - {c.name for c in CASES}
    if unknown:
        raise ValueError(f"${CASES_ENV} names unknown cases: {sorted(unknown)}")
    return tuple(c for c in CASES if not names or c.name in names)


def new_course(course: Path) -> Path:
    """A fresh course with the repository's config and :data:`TEST_LIMITS`."""
    from ch11_autograder.batch import init_course

    init_course(course)
    with (course / "nbgrader_config.py").open("a") as config:
        config.write(TEST_LIMITS)
    return course


def run_batch(source: Path, course: Path, sandbox: str, *, progress=None) -> Any:
    from ch11_autograder.batch import BatchOptions, grade_class

    return grade_class(source, course, BatchOptions(workers=2, sandbox=sandbox, timeout=SUBMISSION_TIMEOUT),
                       progress=progress)


def docker_image() -> str:
    """The grading image for the Docker path (built from this tree once per session, shared with the batch tests).

    Skips without a Docker engine, fails instead when ``$CI`` is set.
    """
    batch_support.require_docker()
    return batch_support.grading_image()


def _records_from_reports(course: Path) -> dict[str, Any]:
    """The batch's records as the Docker run left them in ``reports/ch11-records.json``."""
    rows = json.loads((course / "reports" / f"{ASSIGNMENT}-records.json").read_text())
    return {row["student"]: SimpleNamespace(**row) for row in rows}


def _grade(root: Path, backend: str, listener: Listener, reference: Run | None = None) -> Run:
    """Grade the honest class and the corpus together into a fresh course.

    bwrap: in this process, snapshotting each honest student's rows the moment it is
    merged (*before* the rest of the corpus is). Docker: one container runs the batch;
    *before* is then the honest rows of the bwrap run (``reference``), which the
    deterministic grader must reproduce.
    """
    course = new_course(root / "course")
    source = root / "class"
    copy_class(source)
    ctx = Context(course=course, class_dir=source, allowed_root=root, listener_port=listener.port,
                  evidence_dir=root / "evidence")
    build_corpus(source, ctx, selected_cases())
    before: dict[str, dict] = {}
    started = time.monotonic()
    if backend == "docker":
        from ch11_autograder.batch.docker import run_in_docker

        image = docker_image()
        started = time.monotonic()
        status = run_in_docker(source, course, image=image, workers=2, timeout=SUBMISSION_TIMEOUT)
        assert status in (0, 1), f"the batch in the container was refused (exit {status})"
        records = _records_from_reports(course)
        assert reference is not None
        before = reference.after
    else:

        def progress(event: Any) -> None:
            # Right after an honest student's merge: its rows before the rest of the corpus is merged.
            if event.record is not None and event.record.student in HONEST:
                before[event.record.student] = honest_rows(course)[event.record.student]

        report = run_batch(source, course, "bwrap", progress=progress)
        records = {r.student: r for r in report.records}
    seconds = {"class+corpus": round(time.monotonic() - started, 1)}
    return Run(backend, course, ctx, records, before, honest_rows(course), gradebook_scores(course), listener,
               seconds)


@pytest.fixture(scope="session")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="session")
def bwrap_run(tmp_path_factory, listener) -> Run:
    graded = _grade(tmp_path_factory.mktemp("hostile-bwrap"), "bwrap", listener)
    _record_observed(graded)
    return graded


@pytest.fixture(scope="session")
def docker_run(request, tmp_path_factory, listener) -> Run:
    docker_image()  # skip (or fail under CI) before grading anything
    reference = request.getfixturevalue("bwrap_run")
    graded = _grade(tmp_path_factory.mktemp("hostile-docker"), "docker", listener, reference)
    _record_observed(graded)
    return graded


@pytest.fixture(scope="session", params=["bwrap", "docker"])
def run(request) -> Run:
    return request.getfixturevalue(f"{request.param}_run")


def _record_observed(run: Run) -> None:
    target = os.environ.get("CH11_HOSTILE_OBSERVED")
    if not target:
        return
    target = target.replace("{backend}", run.backend)
    out = {"backend": run.backend, "seconds": run.seconds, "cases": {}}
    for c in CASES:
        record = run.records.get(c.name)
        out["cases"][c.name] = {
            "status": getattr(record, "status", None),
            "error": getattr(record, "error", None),
            "score": sum(run.scores.get(c.name, {}).values()),
            "seconds": getattr(record, "seconds", None),
        }
    Path(target).write_text(json.dumps(out, indent=1, sort_keys=True))


# --------------------------------------------------------------------------- HTML analysis


class ActiveContent(HTMLParser):
    """Collects what a browser would execute: script text, on* handlers, javascript: URLs, frames."""

    URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href", "data")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.active: list[str] = []
        self._script_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._script_depth += 1
        if tag in ("iframe", "object", "embed", "frame"):
            self.active.append(f"<{tag} {attrs}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.active.append(value)
            elif name in self.URL_ATTRIBUTES and value.strip().lower().startswith(("javascript:", "data:text/html")):
                self.active.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script_depth:
            self._script_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._script_depth:
            self.active.append(data)


def active_markers(page: str, marker: str = "HOSTILE_XSS") -> list[str]:
    parser = ActiveContent()
    parser.feed(page)
    return [text[:200] for text in parser.active if marker in text]


def formgrader_html(course: Path, notebook_path: Path) -> str:
    """The submission page as nbgrader's formgrader renders it, with the course's config."""
    from nbconvert import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": ASSIGNMENT, "notebook_id": notebook_path.stem, "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "", "student": "s", "last_name": "", "first_name": "",
                 "notebook_path": str(notebook_path)}
    page, _ = HTMLExporter(config=config).from_filename(str(notebook_path), resources=resources)
    return page


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def outputs_text(path: Path) -> str:
    """Every output of the notebook at ``path`` as JSON text (what the feedback shows besides sources)."""
    nb = nbformat.read(str(path), as_version=4)
    return json.dumps([cell.get("outputs", []) for cell in nb.cells])


def output_lines(run: Run, c: Case, tag: str) -> list[str]:
    """The text after ``tag`` on each output line of ``c``'s autograded notebook that has it."""
    path = run.autograded(c.name, c.notebook)
    text = json.loads(outputs_text(path)) if path.is_file() else []
    found = []
    for outputs in text:
        for output in outputs:
            for value in (output.get("text"), output.get("evalue")):  # not tracebacks: they quote source
                for line in (value if isinstance(value, str) else "").splitlines():
                    if tag in line:
                        found.append(line[line.index(tag) + len(tag):].strip())
    return found


# --------------------------------------------------------------------------- checks


def check_case(run: Run, c: Case) -> None:
    """Every expectation of ``c`` against ``run``; raises AssertionError naming what failed."""
    record = run.records[c.name]
    if c.expect.completes == GRADED:
        assert record.status == "graded", f"expected graded, got {record.status}: {record.error}"
    else:
        assert record.status == "error" and record.error, f"expected a recorded error, got {record.status}"
    earned = run.scores.get(c.name, {})
    total = round(sum(earned.values()), 6)
    assert total <= c.expect.max_auto + TOLERANCE, f"earned {total} > {c.expect.max_auto} ({earned})"
    assert total >= c.expect.min_auto - TOLERANCE, f"earned {total} < {c.expect.min_auto} ({earned})"
    if record.status == "graded":
        assert record.score is not None and record.score <= c.expect.max_auto + TOLERANCE
    if c.expect.max_seconds is not None:
        assert record.seconds <= c.expect.max_seconds, f"grading took {record.seconds} s > {c.expect.max_seconds} s"
    for check in c.expect.checks:
        CHECK_FUNCTIONS[check](run, c)


def _gradebook_untouched(run: Run, c: Case) -> None:
    with Gradebook(f"sqlite:///{run.course / 'gradebook.db'}") as gb:
        renamed = [s.id for s in gb.students if (s.last_name or "").startswith("tampered by")]
        credited = [
            (sub.student.id, nb.name, g.name)
            for sub in gb.assignment_submissions(ASSIGNMENT)
            for nb in sub.notebooks
            for g in nb.grades
            if g.extra_credit
        ]
    assert not renamed, f"students renamed by a payload: {renamed}"
    assert not credited, f"extra credit written by a payload: {credited[:5]}"


def _no_loopback_connection(run: Run, c: Case) -> None:
    assert not run.listener.received, f"the host listener was reached: {run.listener.received[:5]}"
    attempts = output_lines(run, c, "loopback from the")
    assert any(a.startswith("kernel") for a in attempts) and any(a.startswith("worker") for a in attempts), (
        f"the connection attempts did not run in both places: {attempts}"
    )
    assert not any("connected" in a.split(":", 1)[1] for a in attempts), attempts


def _net_unreachable(run: Run, c: Case) -> None:
    lines = output_lines(run, c, "NETPROBE")
    places = {where for line in lines for where in ("kernel", "worker") if f"({where})" in line}
    assert places == {"kernel", "worker"}, f"probe results missing from the outputs: {lines}"
    for line in lines:
        assert "connected" not in line and "timed out" not in line, f"a packet left the sandbox: {line}"


def _feedback_no_script(run: Run, c: Case) -> None:
    page = run.feedback(c.name, c.notebook)
    assert page, "no feedback was generated"
    found = active_markers(page)
    assert not found, f"payload script survives in the feedback HTML: {found}"


def _autograded_no_active_output(run: Run, c: Case) -> None:
    path = run.autograded(c.name, c.notebook)
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert "application/javascript" not in data, f"JavaScript output kept: {data}"
            assert not active_markers(str(data.get("text/html", ""))), f"script in an HTML output: {data}"


def _formgrader_no_script(run: Run, c: Case) -> None:
    page = formgrader_html(run.course, run.autograded(c.name, c.notebook))
    found = active_markers(page)
    assert not found, f"the formgrader page of this submission runs payload script: {found}"


def _feedback_no_course_path(run: Run, c: Case) -> None:
    page = run.feedback(c.name, c.notebook)
    assert output_lines(run, c, "/proc/self/mountinfo"), "the probe's output is not in the outputs"
    assert str(run.course) not in page, "the feedback shows the course directory's path"


def _feedback_no_hidden_source(run: Run, c: Case) -> None:
    page = run.feedback(c.name, c.notebook)
    assert output_lines(run, c, "EXECUTED:"), "the leak hook's output is not in the outputs"
    assert HIDDEN_REGION_TEXT not in page
    assert HIDDEN_REGION_TEXT not in outputs_text(run.autograded(c.name, c.notebook))


def _feedback_small(run: Run, c: Case) -> None:
    path = run.course / "feedback" / c.name / ASSIGNMENT / f"{c.notebook}.html"
    assert path.stat().st_size < MAX_FEEDBACK_BYTES, f"feedback is {path.stat().st_size} bytes"
    size = run.autograded(c.name, c.notebook).stat().st_size
    assert size < MAX_FEEDBACK_BYTES, f"autograded notebook is {size} bytes"


def _disk_bounded(run: Run, c: Case) -> None:
    pattern = re.compile(r"'cwd': \((\d+), '\w+'\), 'tmp': \((\d+), '\w+'\)")
    reports = [m for m in map(pattern.search, output_lines(run, c, "DISKFILL")) if m]
    assert len(reports) >= 2, "the kernel's and the worker's reports are not in the outputs"
    for match in reports:
        cwd, tmp = int(match.group(1)), int(match.group(2))
        assert cwd <= MAX_FILE_BYTES, f"one file in the working directory reached {cwd} bytes"
        assert tmp <= MAX_TMP_BYTES, f"one file in /tmp reached {tmp} bytes"


def _scratch_bounded(run: Run, c: Case) -> None:
    reports = [m for m in map(re.compile(r"total=(\d+)").search, output_lines(run, c, "SCRATCHFILL")) if m]
    assert len(reports) >= 2, "the kernel's and the worker's reports are not in the outputs"
    for match in reports:
        total = int(match.group(1))
        assert total <= MAX_SCRATCH_BYTES, (
            f"the payload wrote {total} bytes ({total / 2**20:.0f} MiB) into its scratch directory on the host disk"
        )


def _no_host_import(run: Run, c: Case) -> None:
    found = sorted(p.name for p in run.ctx.evidence_dir.glob("*")) if run.ctx.evidence_dir.exists() else []
    assert not found, f"planted modules were imported on the host: {found}"


def _no_secret_leak(run: Run, c: Case) -> None:
    page = text_of(run.feedback(c.name, c.notebook))
    for snippet in SECRET_SNIPPETS:
        assert snippet not in page, f"the feedback shows secret content: {snippet!r}"


def _kernel_stopped_responding(run: Run, c: Case) -> None:
    outputs = outputs_text(run.autograded(c.name, c.notebook))
    assert "the kernel stopped responding" in outputs, "no output says that the kernel stopped responding"
    assert "a cell after the deafening one" not in outputs, "a cell after the deafening one ran"
    execution = record_field(run.records[c.name], "execution")
    assert execution and execution["used_seconds"] < c.expect.max_seconds, f"budget use not reported: {execution}"


def record_field(record: Any, name: str) -> Any:
    """A record's field as JSON data (the bwrap run holds dataclasses, the Docker run the JSON's rows)."""
    value = getattr(record, name)
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


CHECK_FUNCTIONS = {
    "gradebook_untouched": _gradebook_untouched,
    "no_loopback_connection": _no_loopback_connection,
    "net_unreachable": _net_unreachable,
    "feedback_no_script": _feedback_no_script,
    "autograded_no_active_output": _autograded_no_active_output,
    "formgrader_no_script": _formgrader_no_script,
    "feedback_no_course_path": _feedback_no_course_path,
    "feedback_no_hidden_source": _feedback_no_hidden_source,
    "feedback_small": _feedback_small,
    "disk_bounded": _disk_bounded,
    "scratch_bounded": _scratch_bounded,
    "no_host_import": _no_host_import,
    "no_secret_leak": _no_secret_leak,
    "kernel_stopped_responding": _kernel_stopped_responding,
}


# --------------------------------------------------------------------------- the graded corpus


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_honest_students_keep_their_gradebook_rows(run):
    """Rows as merged (before the rest of the corpus was) equal the rows at the end."""
    assert set(run.before) == set(HONEST)
    assert run.after == run.before
    assert all(run.records[s].status == "graded" for s in HONEST)


#: What the demo class's definition (ch11_autograder.demo) implies for each honest student:
#: notebook -> "full", "zero" or "less" (a named wrong answer loses points there).
HONEST_EXPECTED = {
    "ada": dict.fromkeys(NOTEBOOK_POINTS, "full"),
    "blank": dict.fromkeys(NOTEBOOK_POINTS, "zero"),
    "hal": {nb: "full" if nb in ("ex1_fanout", "ex2_finite_difference") else "zero" for nb in NOTEBOOK_POINTS},
    "lin": {nb: "less" if nb in ("ex1_fanout", "ex3_block_length") else "full" for nb in NOTEBOOK_POINTS},
}


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_honest_students_get_what_their_work_earns(run):
    """Graded next to the corpus, each honest student scores what the demo class defines (no interference)."""
    for student, expected in HONEST_EXPECTED.items():
        for notebook, kind in expected.items():
            got, full = run.scores[student][notebook], NOTEBOOK_POINTS[notebook]
            if kind == "full":
                assert got == full, (student, notebook, got)
            elif kind == "zero":
                assert got == 0, (student, notebook, got)
            else:
                assert 0 < got < full, (student, notebook, got)


def _honest_csv_rows(run: Run) -> list[str]:
    rows = (run.course / "reports" / f"{ASSIGNMENT}-grades.csv").read_text().splitlines()
    return [rows[0]] + [row for row in rows[1:] if row.split(",")[0] in HONEST]


def _honest_feedback(run: Run) -> dict[str, str]:
    return {f"{s}/{nb}": run.feedback(s, nb) for s in HONEST for nb in NOTEBOOK_POINTS}


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_no_page_says_an_internal_word(run):
    """Every feedback page of the run, hostile and honest: what the grader writes there (the top line, the
    contents, the headings, the verdicts) names functions and tasks, never a grade id or an internal name
    (support.plain_words); a hostile student's own cells may say anything and are not held to it."""
    from support.plain_words import grader_text, offences

    pages = sorted((run.course / "feedback").rglob("*.html"))
    assert pages, "no feedback was generated"
    bad = {str(p.relative_to(run.course)): found for p in pages if (found := offences(grader_text(p.read_text())))}
    assert not bad, "\n".join(f"{page}: {found}" for page, found in bad.items())
    assert all(grader_text(p.read_text()) for p in pages), "a page without the grader's top line and verdicts"


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_the_demo_class_grades_identically_in_the_image_and_under_bwrap(bwrap_run, docker_run):
    """The honest students, graded inside the grading image beside the corpus: the same rows, CSV and feedback."""
    assert docker_run.after == bwrap_run.after
    assert _honest_csv_rows(docker_run) == _honest_csv_rows(bwrap_run)
    feedback = _honest_feedback(bwrap_run)
    assert all(feedback.values()) and len(feedback) == len(HONEST) * len(NOTEBOOK_POINTS)
    assert _honest_feedback(docker_run) == feedback  # byte for byte
    summary = (docker_run.course / "reports" / f"{ASSIGNMENT}-summary.txt").read_text()
    assert "sandbox container-user, 2 workers" in summary


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_no_planted_module_and_no_listener_were_reached(run):
    _no_host_import(run, CASES[0])
    assert not run.listener.received


@pytest.mark.slow
@pytest.mark.hostile_batch
def test_gradebook_holds_no_payload_traces(run):
    _gradebook_untouched(run, CASES[0])


@pytest.mark.slow
@pytest.mark.hostile_batch
@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_case_gets_its_safe_outcome(run, c):
    if c not in selected_cases():
        pytest.skip(f"not among ${CASES_ENV}")
    check_case(run, c)


# --------------------------------------------------------------------------- without the defence


@dataclass
class Demo:
    """The sample graded without a defence, and what the attacks achieved there."""

    course: Path
    scores: dict[str, dict[str, float]]
    ctx: Context
    listener: Listener | None = None
    records: dict[str, Any] = field(default_factory=dict)


#: Cases that, unsandboxed, rewrite every gradebook they can find.
GRADEBOOK_ATTACKS = frozenset({"gradebook_absolute", "gradebook_relative"})


@pytest.fixture(scope="session")
def unsandboxed(tmp_path_factory) -> Iterator[Demo]:
    """The ``none`` sample graded by the batch grader with CH11_SANDBOX=none (kernel and worker unsandboxed)."""
    root = tmp_path_factory.mktemp("hostile-none")
    source, peers, course = root / "class", root / "peers", root / "course"
    copy_class(peers, ("ada",))
    server = Listener()
    ctx = Context(course=course, class_dir=peers, allowed_root=root, listener_port=server.port,
                  evidence_dir=root / "evidence")
    cases = [c for c in CASES if c.unsandboxed_demo == "none"]
    # Unsandboxed, the gradebook attacks rewrite every gradebook they find, the isolated ones of
    # classmates being graded at the same time included: they get a batch of their own, after
    # the others' records are taken.
    build_corpus(source, ctx, [c for c in cases if c.name not in GRADEBOOK_ATTACKS])
    build_corpus(root / "tamperers", ctx, [c for c in cases if c.name in GRADEBOOK_ATTACKS])
    new_course(course)
    records = {r.student: r for r in run_batch(source, course, "none").records}
    records.update({r.student: r for r in run_batch(root / "tamperers", course, "none").records})
    yield Demo(course, gradebook_scores(course), ctx, server, records)
    server.close()


PLAIN_CONFIG = '''
c = get_config()  # noqa: F821
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"
c.Execute.timeout = 60
'''


@pytest.fixture(scope="session")
def plain(tmp_path_factory) -> Demo:
    """The ``plain`` sample and ada graded by plain nbgrader (kernel in the course tree, outputs scored)."""
    from ch11_autograder.nbgrader_cli import run_nbgrader

    root = tmp_path_factory.mktemp("hostile-plain")
    course = root / "course"
    (course / "source").mkdir(parents=True)
    shutil.copytree(SOURCE_DIR, course / "source" / ASSIGNMENT)
    (course / "nbgrader_config.py").write_text(PLAIN_CONFIG)
    submitted = root / "submitted"
    copy_class(submitted, ("ada",))
    ctx = Context(course=course, class_dir=submitted, allowed_root=root)
    cases = [c for c in CASES if c.unsandboxed_demo == "plain"]
    build_corpus(submitted, ctx, cases)
    shutil.copytree(submitted, course / "submitted")
    for student in course.joinpath("submitted").iterdir():
        (student / ASSIGNMENT / "timestamp.txt").write_text("2026-11-20 12:00:00.000000 UTC\n")
    for args in (("generate_assignment", ASSIGNMENT, "--force"), ("autograde", ASSIGNMENT, "--force"),
                 ("generate_feedback", ASSIGNMENT, "--force")):
        with (root / f"{args[0]}.log").open("w") as log:
            run_nbgrader(course, *args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return Demo(course, gradebook_scores(course), ctx)


def _tampered(course: Path) -> bool:
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return any((s.last_name or "").startswith("tampered by") for s in gb.students)


def _earned(demo: Demo, name: str) -> float:
    """What grading gave the case: its batch record's points where it has one, else the gradebook's.

    The unsandboxed sample grades the gradebook attacks into the same course after the others,
    and gradebook_absolute zeroes every other student it finds there, so the course's gradebook
    alone would make the other cases' outcomes depend on it too. The record holds what the
    case's own isolated grading gave it, whatever came later.
    """
    record = demo.records.get(name)
    if record is not None:
        return round(sum(record.per_notebook.values()), 6)
    return round(sum(demo.scores.get(name, {}).values()), 6)


#: For each sampled case: the unsafe outcome it reaches without the defence.
UNSAFE = {
    "gradebook_relative": lambda d: _tampered(d.course),
    "gradebook_absolute": lambda d: _tampered(d.course) or _earned(d, "gradebook_absolute") > 0,
    "input_transformers_post": lambda d: _earned(d, "input_transformers_post") == NOTEBOOK_POINTS["ex4_audit"],
    "output_spoof_display_hook": lambda d: _earned(d, "output_spoof_display_hook") > 0,
    "import_reference_library": lambda d: _earned(d, "import_reference_library") == NOTEBOOK_POINTS["ex3_block_length"],
    "import_hidden_suites": lambda d: _earned(d, "import_hidden_suites") == NOTEBOOK_POINTS["ex4_audit"],
    "read_answer_key_files": lambda d: _earned(d, "read_answer_key_files") == NOTEBOOK_POINTS["ex4_audit"],
    # The stolen answers are exec'd in the last answer cell, below the earlier cells' visible checks,
    # which therefore fail (they would in the student's notebook too): every hidden property passes.
    "read_other_submissions": lambda d: _earned(d, "read_other_submissions") >= 0.85 * NOTEBOOK_POINTS["ex1_fanout"],
    "network_loopback": lambda d: d.listener is not None and any(b"network_loopback" in m for m in d.listener.received),
    "script_in_outputs": lambda d: bool(active_markers(
        (d.course / "feedback" / "script_in_outputs" / ASSIGNMENT / "ex4_audit.html").read_text())),
    "stderr_warnings": lambda d: _earned(d, "stderr_warnings") < NOTEBOOK_POINTS["ex4_audit"],
}

SAMPLE = [c for c in CASES if c.unsandboxed_demo]


@pytest.mark.hostile_batch
def test_every_sampled_case_has_an_unsafe_outcome():
    assert {c.name for c in SAMPLE} == set(UNSAFE)
    assert {c.unsandboxed_demo for c in SAMPLE} == {"none", "plain"}


@pytest.mark.slow
@pytest.mark.hostile_batch
@pytest.mark.parametrize("c", SAMPLE, ids=[f"{c.unsandboxed_demo}-{c.name}" for c in SAMPLE])
def test_attack_works_without_the_defence(c, request):
    demo = request.getfixturevalue("unsandboxed" if c.unsandboxed_demo == "none" else "plain")
    assert UNSAFE[c.name](demo), (
        f"{c.name}: without the defence ({c.unsandboxed_demo}) the attack should have succeeded; "
        f"earned {_earned(demo, c.name)}; gradebook {demo.scores.get(c.name)}"
    )


# --------------------------------------------------------------------------- the corpus itself (fast)


def test_the_corpus_is_large_and_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) >= 25
    assert len(set(names)) == len(names)
    assert not set(names) & set(HONEST)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in names)


def test_every_check_named_by_a_case_is_implemented():
    assert set(CHECK_FUNCTIONS) == set(CHECKS)
    assert {ch for c in CASES for ch in c.expect.checks} <= set(CHECK_FUNCTIONS)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-built")
    copy_class(root / "class", ("ada",))
    build_corpus(root / "class", Context(course=root / "course", class_dir=root / "class", allowed_root=root))
    return root / "class"


def test_every_case_writes_its_notebook(built):
    for c in CASES:
        assert (built / c.name / ASSIGNMENT / f"{c.notebook}.ipynb").is_file(), c.name


def _payload_cells(path: Path) -> list[str]:
    nb = nbformat.read(str(path), as_version=4)
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("c", [c for c in CASES if c.expect.completes == GRADED], ids=lambda c: c.name)
def test_every_payload_is_valid_python(built, c):
    """A payload with a syntax error would attack nothing, and its safe outcome would prove nothing."""
    path = built / c.name / ASSIGNMENT / f"{c.notebook}.ipynb"
    for index, source in enumerate(_payload_cells(path)):
        compile(source, f"{c.name} cell {index}", "exec")


def test_payloads_differ_from_the_base_notebook(built):
    """Each case really changed its notebook (or its files): no attack is a no-op by mistake."""
    from support.hostile_corpus import base_notebook

    for c in CASES:
        folder = built / c.name / ASSIGNMENT
        text = (folder / f"{c.notebook}.ipynb").read_text()
        base = nbformat.writes(base_notebook(c.notebook, c.base))
        extra = [p for p in folder.iterdir() if p.name != f"{c.notebook}.ipynb"]
        assert text.strip() != base.strip() or extra, c.name


def test_broken_notebooks_are_really_broken(built):
    with pytest.raises(json.JSONDecodeError):
        json.loads((built / "malformed_json" / ASSIGNMENT / "ex4_audit.ipynb").read_text())
    assert json.loads((built / "nbformat_v3" / ASSIGNMENT / "ex4_audit.ipynb").read_text())["nbformat"] == 3
    assert json.loads((built / "nbformat_v5" / ASSIGNMENT / "ex4_audit.ipynb").read_text())["nbformat"] == 5


def test_the_docs_table_lists_every_case():
    """docs/hostile.md holds the case table as render_table() makes it (observed columns aside)."""
    lines = DOCS.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| case | attempts |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = lines[start + 2 : end]
    expected = render_table().splitlines()[2:]
    assert [r.split(" | ")[:7] for r in rows] == [r.rstrip(" |").split(" | ")[:7] for r in expected]
