"""The grading session: the batch's set-up once, submissions graded one at a time (real nbgrader, bwrap).

One session grades a few one-notebook submissions one after the other on one slot; the
same submissions graded by ``grade_class`` in one batch must end with the same records, and
the slot's nbgrader fork server must have been started once for all of them.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from ch11_autograder.batch import BatchOptions, grade_class, gradebook_snapshot, nbgrader_fork
from ch11_autograder.batch.ledger import Ledger
from ch11_autograder.batch.session import GradingSession
from support import batch_support
from support.paths import ASSIGNMENT

NOTEBOOK = "ex4_audit.ipynb"
#: Graded one after the other, in this order: two answered, one unanswered (the released notebook), and
#: one whose notebook is not JSON (refused at intake: an error record, nothing graded).
STUDENTS = ("ada", "hal", "blank", "broken")


def _folder(root: Path, student: str, inputs: Path) -> Path:
    """``root/<student>/ch11/ex4_audit.ipynb``: the student's notebook of the demo class."""
    dest = root / student / ASSIGNMENT
    dest.mkdir(parents=True)
    if student == "broken":
        (dest / NOTEBOOK).write_text("{ not a notebook")
    else:
        shutil.copy2(inputs / "class" / student / ASSIGNMENT / NOTEBOOK, dest / NOTEBOOK)
    return root


_CountedServer = batch_support.counted_server_class()


@pytest.fixture(scope="module")
def session_graded(tmp_path_factory):
    """(course, records by student, fork server pids): the students graded by one session, one at a time."""
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    root = tmp_path_factory.mktemp("session")
    course = batch_support.assigned_course(base, root / "course")
    records = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nbgrader_fork, "NbgraderForkServer", _CountedServer)
        _CountedServer.pids = []
        with GradingSession(course, BatchOptions(workers=1, sandbox="bwrap")) as session:
            for n, student in enumerate(STUDENTS):
                for record in session.submit(_folder(root / f"in-{n}", student, inputs)):
                    records[record.student] = record
                while session.in_flight():
                    for record in session.wait():
                        records[record.student] = record
                assert student in records, f"{student} was not finished before the next submission"
            started = session.fork_servers_started
        pids = list(_CountedServer.pids)
    return course, records, pids, started


def test_the_fork_server_is_started_once_for_submissions_graded_one_after_the_other(session_graded):
    _course, records, pids, started = session_graded
    assert [records[s].status for s in STUDENTS] == ["graded", "graded", "graded", "error"]
    # A session that set its runner up again per submission (as a batch per submission does) starts three.
    assert len(pids) == 1 and started == 1


def test_the_session_s_records_equal_grade_class_s_for_the_same_submissions(session_graded, tmp_path_factory):
    course, records, _pids, _started = session_graded
    base = tmp_path_factory.getbasetemp()
    inputs = batch_support.inputs(base)
    root = tmp_path_factory.mktemp("batch")
    source = root / "class"
    for student in STUDENTS:
        _folder(source, student, inputs)
    batch_course = batch_support.assigned_course(base, root / "course")
    report = grade_class(source, batch_course, BatchOptions(workers=2, sandbox="bwrap", feedback=False))

    def outcome(record):
        return (record.status, record.score, record.max_score, record.per_notebook, record.sha256,
                record.error is None)

    assert {r.student: outcome(r) for r in report.records} == {s: outcome(r) for s, r in records.items()}
    assert records["ada"].score != records["blank"].score  # the comparison compares something
    assert gradebook_snapshot(course, ASSIGNMENT) == gradebook_snapshot(batch_course, ASSIGNMENT)
    # The ledger: one line per submission, as the batch writes them.
    def lines(where: Path) -> list[tuple]:
        return sorted(((e.event, e.student, e.sha256, e.score)
                       for e in Ledger(where / ".ch11-batch" / "ledger.jsonl").entries()), key=str)

    assert lines(course) == lines(batch_course)


def test_a_submission_merged_before_is_resumed_and_a_student_in_flight_refused(session_graded, tmp_path,
                                                                             tmp_path_factory):
    course, records, _pids, _started = session_graded
    inputs = batch_support.inputs(tmp_path_factory.getbasetemp())
    work = tmp_path / "course"
    shutil.copytree(course, work, symlinks=True)
    with GradingSession(work, BatchOptions(workers=1, sandbox="bwrap")) as session:
        again = session.submit(_folder(tmp_path / "again", "ada", inputs))
        assert [(r.status, r.score) for r in again] == [("skipped_resume", records["ada"].score)]
        assert not session.in_flight()
        changed = _folder(tmp_path / "changed", "hal", inputs)
        notebook = changed / "hal" / ASSIGNMENT / NOTEBOOK
        data = json.loads(notebook.read_text())
        data["metadata"]["resubmitted"] = True  # other inputs: graded again, not resumed
        notebook.write_text(json.dumps(data))
        assert session.submit(changed) == [] and session.in_flight() == {"hal"}
        with pytest.raises(ValueError, match="already being graded: hal"):
            session.submit(changed)
    # Closed with hal in flight: killed, nothing of it in the ledger (only hal's first grading is).
    lines = [e.student for e in Ledger(work / ".ch11-batch" / "ledger.jsonl").entries()]
    assert lines.count("hal") == 1 and lines.count("ada") == 1
    deadline = time.monotonic() + 10
    while batch_support.processes_under(work) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert batch_support.processes_under(work) == [], "closing the session left graders running"


def test_the_open_session_compacts_the_ledger_under_its_own_lock(session_graded, tmp_path):
    """The session holds the course's batch lock for its life, so nobody else may compact the ledger meanwhile
    (serve/prune.py's own compaction finds the lock taken); the session compacts it under that lock."""
    from ch11_autograder.serve.prune import compact_ledger

    course, _records, _pids, _started = session_graded
    work = tmp_path / "course"
    shutil.copytree(course, work, symlinks=True)
    ledger = Ledger(work / ".ch11-batch" / "ledger.jsonl")
    first = next(e for e in ledger.entries() if e.event == "graded")
    for _ in range(3):  # three more gradings of the same student: only the last one is read
        ledger.append(first)
    before = len(list(ledger.entries()))
    with GradingSession(work, BatchOptions(workers=1, sandbox="bwrap")) as session:
        assert compact_ledger(work) is None  # the lock is the session's
        assert session.compact_ledger() == (before, before - 3)
    with pytest.raises(ValueError, match="closed"):
        session.compact_ledger()
    assert len(list(ledger.entries())) == before - 3
    assert compact_ledger(work) == (before - 3, before - 3)  # closed: the lock is free again
