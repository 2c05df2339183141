"""The practice course's class report kept current by the service (serve/live_report.py).

When a refresh is due is a rule on two numbers (tested alone); the refresh itself is the real report
command in a real child process: on a course it cannot report on (it fails, is said once, and is not run
in a loop) and, at the end, on the practice course of a real service run that graded a submission.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from ch11_autograder.batch import init_course
from ch11_autograder.paths import COURSE_CONFIG, SOURCE_DIR
from ch11_autograder.serve.live_report import LiveReport, due
from ch11_autograder.serve.policy import ServePolicy, ServeSettings
from ch11_autograder.serve.service import Service
from support.inbound_folder import own_submission


def test_due_after_every_n_or_m_minutes_and_never_without_news() -> None:
    assert not due(0, 10_000, every=10, minutes=15)  # nothing finished: nothing new to show
    assert not due(9, 60, every=10, minutes=15)
    assert due(10, 0, every=10, minutes=15)
    assert due(1, 15 * 60, every=10, minutes=15)
    assert not due(50, 10_000, every=0, minutes=0)  # both off
    assert not due(50, 14 * 60, every=0, minutes=15) and due(1, 15 * 60, every=0, minutes=15)


def _until_ended(live: LiveReport, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while live._child is not None:
        assert time.monotonic() < deadline, "the report child did not end"
        live.poll()
        time.sleep(0.1)


def test_a_failing_refresh_is_said_once_and_not_run_in_a_loop(tmp_path: Path) -> None:
    said: list[str] = []
    now = [0.0]
    live = LiveReport(tmp_path / "not-a-course", every=0, minutes=1, log=tmp_path / "logs" / "report.log",
                      say=said.append, clock=lambda: now[0])
    live.finished()
    assert live._child is None, "by time only: not before the minute"
    now[0] = 61.0
    live.poll()
    assert live._child is not None
    _until_ended(live)
    assert len(said) == 1 and said[0].startswith("report   failed (exit status")
    assert "no gradebook.db" in (tmp_path / "logs" / "report.log").read_text()
    for _ in range(5):  # the same failure is not started again at every poll
        live.poll()
    assert live._child is None and len(said) == 1


@pytest.mark.slow
def test_the_service_keeps_the_practice_report_current(tmp_path: Path) -> None:
    """A real ``serve --once`` run grades one submission; the practice course then holds the class report with
    the same sections as the official one, written whole (no temporary file left), and the log says so."""
    course = tmp_path / "course"
    init_course(course, config=COURSE_CONFIG, source_dir=SOURCE_DIR)
    inbound = tmp_path / "exchange" / "c1" / "inbound"
    inbound.mkdir(parents=True)
    me, _stamp = own_submission(inbound, SOURCE_DIR / "ex4_audit.ipynb")
    out = io.StringIO()
    policy = ServePolicy(workers=1, rescan_seconds=1, report_every=1, report_minutes=0)
    service = Service(ServeSettings(course, tmp_path / "exchange", "c1", policy, course / "practice"), out=out)
    assert service.run_once() == 1
    log = out.getvalue()
    assert f"graded   {me}" in log and "report   refreshed" in log, log
    reports = course / "practice" / "reports"
    page = (reports / "ch11-report.html").read_text()
    for section in ("Scores", "Test cells and properties", "Misconceptions: the re-teach list",
                    "Similar answers (evidence, not a verdict)"):
        assert f">{section}</h2>" in page
    assert me in page
    assert (reports / "ch11-report.md").is_file() and (reports / "ch11-similarity.json").is_file()
    assert not [p.name for p in reports.iterdir() if p.name.endswith(".tmp")]
