"""The verdict cache (``trusted/verdict_cache.py``) with the real nbgrader commands on the toy.

A course is graded once without the cache (the reference bytes), then twice with it: the
first cached run stores, the second reuses, and what it leaves (autograded notebooks,
gradebook scores, feedback HTML) is byte-identical to the uncached run, while its log
shows that no notebook was executed and no suite ran. A changed notebook, a changed suite
file and a corrupt entry are each a miss that grades afresh. ``CH11_SANDBOX=none``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from ch11_autograder.trusted.verdict_cache import CACHE_ENV, VerdictCache, prune
from support.paths import COURSE_CONFIG
from support.toy_course import TOY, make_course, nbgrader, scores, submit

pytestmark = pytest.mark.slow

#: student -> solution cell (expected toy scores: 2, 1, 0).
STUDENTS = {
    "correct": "def double(x):\n    return 2 * x",
    "partial": "def double(x):\n    return int(2 * x)",
    "adds": "def double(x):\n    return x + 2",
}
#: What the steps the cache replaces log for every notebook they grade.
EXECUTED = "sandboxed execution: outputs of"
GRADED = "of 2 points"


def outputs(course: Path) -> dict[str, bytes]:
    """Every file autograde and generate_feedback wrote, by relative path."""
    found = {}
    for folder in ("autograded", "feedback"):
        for path in sorted((course / folder).rglob("*")):
            if path.is_file():
                found[path.relative_to(course).as_posix()] = path.read_bytes()
    return found


def autograde(course: Path, cache: Path, *students: str) -> str:
    """``nbgrader autograde toy --force`` (for ``students``, else all) with the cache on; its log."""
    selected = [f"--student={s}" for s in students] if students else []
    proc = nbgrader(course, "autograde", "toy", "--force", *selected, env={CACHE_ENV: str(cache)})
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(course, suite copy, cache dir, uncached bytes, uncached scores, log of the miss run, log of the hit run)."""
    root = tmp_path_factory.mktemp("course")
    suite = root.parent / f"{root.name}-suite" / "toy_suite.py"
    suite.parent.mkdir()
    shutil.copy(TOY / "toy_suite.py", suite)
    config = (
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(COURSE_CONFIG)!r})  # noqa: F821\n"
        f"c.TrustedVerdicts.suite_modules = [{str(suite)!r}]\n"
        "c.TrustedVerdicts.call_timeout = 2.0\n"
    )
    course = make_course(root, config)
    for student, code in STUDENTS.items():
        submit(course, student, code, [])
    nbgrader(course, "autograde", "toy")
    nbgrader(course, "generate_feedback", "toy")
    fresh, fresh_scores = outputs(course), scores(course)
    cache = root.parent / f"{root.name}-cache"
    miss = autograde(course, cache)
    hit = autograde(course, cache)
    nbgrader(course, "generate_feedback", "toy", "--force")
    return course, suite, cache, fresh, fresh_scores, miss, hit


def test_the_first_cached_run_grades_and_stores_each_notebook(graded):
    _course, _suite, cache, _fresh, _scores, miss, _hit = graded
    assert miss.count("verdict cache: miss for toy") == len(STUDENTS)
    assert miss.count("verdict cache: stored entry") == len(STUDENTS)
    assert miss.count(EXECUTED) == len(STUDENTS) and miss.count(GRADED) == len(STUDENTS)
    assert len(list(cache.glob("*.json"))) == len(STUDENTS)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"


def test_the_second_run_reuses_every_verdict_without_executing_anything(graded):
    _course, _suite, _cache, _fresh, _scores, _miss, hit = graded
    assert hit.count("verdict cache: hit for toy") == len(STUDENTS)
    assert "verdict cache: miss" not in hit
    assert EXECUTED not in hit and GRADED not in hit  # neither the sandbox nor a suite ran


def test_reused_verdicts_are_byte_identical_to_an_uncached_run(graded):
    course, _suite, _cache, fresh, fresh_scores, _miss, _hit = graded
    assert fresh_scores == {"correct": 2.0, "partial": 1.0, "adds": 0.0}
    assert scores(course) == fresh_scores
    now = outputs(course)
    assert sorted(now) == sorted(fresh)
    assert any(name.endswith(".html") for name in now) and any(name.endswith(".ipynb") for name in now)
    assert [name for name in fresh if now[name] != fresh[name]] == []


def test_a_changed_notebook_misses_and_only_it_is_graded_again(graded):
    course, _suite, cache, _fresh, _scores, _miss, _hit = graded
    submit(course, "adds", STUDENTS["adds"] + "\n# looked at it again", [])
    log = autograde(course, cache)
    assert log.count("verdict cache: miss for toy") == 1 and log.count("verdict cache: hit for toy") == 2
    assert log.count(EXECUTED) == 1
    assert scores(course)["adds"] == 0.0


def entry_of(cache: Path, student: str) -> Path:
    """The cache entry of ``student``'s current notebook (found by its solution cell's source digest)."""
    digest = hashlib.sha256(STUDENTS[student].encode()).hexdigest()
    found = [path for path in cache.glob("*.json")
             if digest in {cell["source_sha256"] for cell in json.loads(path.read_text())["cells"]}]
    assert len(found) == 1, found
    return found[0]


def test_corrupt_entries_are_logged_misses_and_are_replaced(graded):
    course, _suite, cache, _fresh, _scores, _miss, _hit = graded
    tampered = entry_of(cache, "correct")
    entry = json.loads(tampered.read_text())
    entry["cells"][-1]["outputs"] = [{"output_type": "execute_result", "data": {"text/plain": "2.0"}}]
    tampered.write_text(json.dumps(entry))  # the payload digest no longer matches
    entry_of(cache, "partial").write_bytes(b'{"version": 1, "key": "trunc')
    log = autograde(course, cache)
    assert log.count("is unusable (its payload does not match its digest); grading afresh") == 1
    assert log.count("is unusable (not valid JSON); grading afresh") == 1
    assert log.count(EXECUTED) == 2 and log.count("verdict cache: stored entry") == 2
    assert log.count("verdict cache: hit for toy") == 1  # adds, stored by the test before
    assert scores(course) == {"correct": 2.0, "partial": 1.0, "adds": 0.0}
    json.loads(entry_of(cache, "partial").read_text())  # whole again


def test_a_changed_suite_misses(graded):
    course, suite, cache, _fresh, _scores, _miss, _hit = graded
    suite.write_text(suite.read_text() + "\n# the suite changed\n")
    log = autograde(course, cache, "partial")
    assert "verdict cache: miss for toy" in log and log.count(EXECUTED) == 1
    assert scores(course)["partial"] == 1.0


# --------------------------------------------------------------------------- configuration, pruning


def test_the_cache_is_off_by_default_and_refuses_a_relative_path(monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    assert VerdictCache().location() is None
    monkeypatch.setenv(CACHE_ENV, "relative/cache")
    assert VerdictCache().location() is None
    monkeypatch.setenv(CACHE_ENV, "/abs/cache")
    assert VerdictCache().location() == Path("/abs/cache")
    assert VerdictCache(directory="/course/cache").location() == Path("/course/cache")  # the trait wins


def test_pruning_removes_least_recently_used_entries_and_stale_temporary_files(tmp_path):
    now = time.time()
    for age, name in enumerate(["newest", "middle", "oldest"]):
        path = tmp_path / f"{name}.json"
        path.write_bytes(b"x" * 100)
        os.utime(path, (now - 10 * age, now - 10 * age))
    stale, fresh_temp = tmp_path / ".tmp-dead.json", tmp_path / ".tmp-live.json"
    for path, age in ((stale, 7200), (fresh_temp, 5)):
        path.write_bytes(b"y")
        os.utime(path, (now - age, now - age))
    removed = prune(tmp_path, 250, now=now)
    assert sorted(removed) == [".tmp-dead.json", "oldest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-live.json", "middle.json", "newest.json"]
    assert prune(tmp_path, 0, now=now) == ["middle.json", "newest.json"]
