"""The Gradescope autograder: results.json against Gradescope's specification, the zip, and real runs.

The field checks below are written from Gradescope's "Autograder Specifications"
(gradescope-autograders.readthedocs.io/en/latest/specs/): the documented
top-level and per-test keys, the four visibility values, the output formats
(text, html, simple_format, md, ansi) and the test status values.
"""

from __future__ import annotations

import json
import math
import re
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest
from ch11_autograder.batch.records import SubmissionRecord
from ch11_autograder.gradescope import build_zip
from ch11_autograder.gradescope.results import failure_results, results_for
from ch11_autograder.trusted.verdicts import task_name
from nbgrader.api import Gradebook
from support import batch_support
from support.paths import SOURCE_DIR


@pytest.fixture
def inputs(tmp_path_factory) -> Path:
    """The session's copy of the demo class and source notebooks (``batch_support.inputs``)."""
    return batch_support.inputs(tmp_path_factory.getbasetemp())

# --------------------------------------------------------------------------- the specification

TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
            "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags",
             "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
STATUS = {"passed", "failed"}


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def spec_problems(data) -> list[str]:
    """Everything in ``data`` that Gradescope's results.json specification does not allow."""
    problems = []
    if not isinstance(data, dict):
        return ["results.json must be a JSON object"]
    problems += [f"unknown top-level key {k!r}" for k in sorted(set(data) - TOP_KEYS)]
    tests = data.get("tests")
    if "score" not in data and (not isinstance(tests, list) or any("score" not in t for t in tests)):
        problems.append("a top-level score is required unless every test has one")
    if "score" in data and not _number(data["score"]):
        problems.append("score must be a number")
    if "execution_time" in data and not (_number(data["execution_time"]) and data["execution_time"] >= 0):
        problems.append("execution_time must be a number of seconds")
    for key in ("output",):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} must be a string")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in data and data[key] not in FORMATS:
            problems.append(f"{key} must be one of {sorted(FORMATS)}")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITY:
            problems.append(f"{key} must be one of {sorted(VISIBILITY)}")
    if "extra_data" in data and not isinstance(data["extra_data"], dict):
        problems.append("extra_data must be an object")
    if tests is not None and not isinstance(tests, list):
        problems.append("tests must be a list")
    for i, test in enumerate(tests or []):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            problems.append(f"{where} must be an object")
            continue
        problems += [f"{where}: unknown key {k!r}" for k in sorted(set(test) - TEST_KEYS)]
        for key in ("score", "max_score"):
            if key in test and not _number(test[key]):
                problems.append(f"{where}.{key} must be a number")
        for key in ("name", "number", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{where}.{key} must be a string")
        for key in ("output_format", "name_format"):
            if key in test and test[key] not in FORMATS:
                problems.append(f"{where}.{key} must be one of {sorted(FORMATS)}")
        if "visibility" in test and test["visibility"] not in VISIBILITY:
            problems.append(f"{where}.visibility must be one of {sorted(VISIBILITY)}")
        if "status" in test and test["status"] not in STATUS:
            problems.append(f"{where}.status must be passed or failed")
        if "tags" in test and not (isinstance(test["tags"], list) and all(isinstance(t, str) for t in test["tags"])):
            problems.append(f"{where}.tags must be a list of strings")
    return problems


def our_contract(data) -> list[str]:
    """What this autograder promises beyond the specification: plain text, consistent scores."""
    problems = spec_problems(data)
    if data.get("output_format") != "text" or data.get("stdout_visibility") != "hidden":
        problems.append("top-level output must be plain text and stdout hidden")
    total = 0.0
    for i, test in enumerate(data.get("tests", [])):
        missing = {"name", "score", "max_score", "visibility", "output"} - set(test)
        if missing:
            problems.append(f"tests[{i}] lacks {sorted(missing)}")
            continue
        if not 0 <= test["score"] <= test["max_score"]:
            problems.append(f"tests[{i}] score outside [0, max_score]")
        if test.get("output_format") != "text" or test.get("name_format") != "text":
            problems.append(f"tests[{i}] must be plain text")
        if test.get("status") != ("passed" if test["score"] >= test["max_score"] else "failed"):
            problems.append(f"tests[{i}] status disagrees with its score")
        total += test["score"]
    if data.get("tests") and abs(total - data["score"]) > 1e-6:
        problems.append("top-level score is not the sum of the tests")
    return problems


def test_the_checks_reject_what_the_specification_does_not_allow():
    good = {"score": 1.0, "output": "ok", "output_format": "text", "stdout_visibility": "hidden",
            "tests": [{"name": "t", "score": 1.0, "max_score": 1.0, "status": "passed", "visibility": "visible",
                       "output": "fine", "output_format": "text", "name_format": "text"}]}
    assert our_contract(good) == []
    wrong = [
        {**good, "visibility": "public"},
        {**good, "score": "1"},
        {**good, "scores": 1},
        {**good, "output_format": "rtf"},
        {**good, "tests": [{**good["tests"][0], "status": "ok"}]},
        {**good, "tests": [{**good["tests"][0], "max_score": "2"}]},
        {**good, "tests": [{**good["tests"][0], "hidden_source": "assert x"}]},
        {"output": "no score anywhere", "tests": [{"name": "t"}]},
    ]
    for variant in wrong:
        assert spec_problems(variant), variant
    assert our_contract({**good, "output_format": "html"}) and our_contract({**good, "score": 2.0})


def _cell_sources(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _leaks(data, hidden: list[str]) -> list[str]:
    """Hidden test lines (or the region markers) found in any string of a results.json."""
    texts = _strings(data)
    return [line for line in [*hidden, "BEGIN HIDDEN TESTS"] if any(line in t for t in texts)]


def _hidden_test_lines(source: Path) -> list[str]:
    """Substantial lines of every hidden test region of the source notebooks in ``source``."""
    lines = []
    for path in sorted(source.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for region in re.findall(r"BEGIN HIDDEN TESTS(.*?)END HIDDEN TESTS", source, re.S):
                lines += [line.strip() for line in region.splitlines() if len(line.strip()) > 15]
    return sorted(set(lines))


# --------------------------------------------------------------------------- results.json from a course


def _record(report, student):
    return next(r for r in report.records if r.student == student)


def test_results_for_a_graded_student_follow_the_specification(tmp_path_factory, inputs):
    course, report = batch_support.small_graded_course(tmp_path_factory.getbasetemp())
    data = results_for(course, _record(report, "lin"), assignment="ch11", visibility="after_due_date",
                       execution_time=12.4)
    assert our_contract(data) == []
    assert data["execution_time"] == 12
    assert all(t["visibility"] == "after_due_date" for t in data["tests"])
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        expected = {f"{nb.name}: {task_name(g.name)}": g.score for nb in gb.find_submission("ch11", "lin").notebooks
                    for g in nb.grades if g.cell.cell_type == "code"}
    assert {t["name"]: t["score"] for t in data["tests"]} == expected and len(expected) == 13
    assert data["score"] == round(sum(expected.values()), 6) == 10.73  # 7 (ex1) + 3.73 (ex3)
    by_name = {t["name"]: t for t in data["tests"]}
    failing = by_name["ex1_fanout: input_gradient"]
    assert failing["status"] == "failed" and "Last writer wins" in failing["output"]
    assert by_name["ex1_fanout: extended_tape"]["status"] == "passed"
    assert failing["output"].startswith("First thing to fix: ")
    first = next(t for t in data["tests"] if t["status"] == "failed")  # the results open with what to fix first
    assert data["output"].splitlines()[0] == f"{first['name']}: " + first["output"].splitlines()[0]
    assert by_name["ex4_audit: audit_marks"]["output"] == "ex4_audit.ipynb was not submitted: 0 points."
    assert [t["number"] for t in data["tests"]][:4] == ["1.1", "1.2", "1.3", "2.1"]
    assert "graded by hand (7 points)" in data["output"]  # ex1_derivation 4 + ex3_report 3
    assert any("ex5_replay.ipynb: not submitted" in line for line in data["output"].splitlines())
    # Never the hidden tests' source, although the autograded notebooks hold it.
    hidden = _hidden_test_lines(inputs / "source" / "ch11")
    autograded = "\n".join(_cell_sources(p) for p in (course / "autograded" / "lin" / "ch11").glob("*.ipynb"))
    assert hidden and "BEGIN HIDDEN TESTS" in autograded and any(line in autograded for line in hidden)
    assert _leaks(data, hidden) == []
    assert _leaks({"tests": [{"output": "x\n" + hidden[0]}]}, hidden) == [hidden[0]]  # the check can fail


def test_results_for_an_error_name_the_cause_and_score_zero(tmp_path_factory):
    course, _ = batch_support.small_graded_course(tmp_path_factory.getbasetemp())
    record = SubmissionRecord("student", "error", "ex1_fanout.ipynb: malformed JSON (Expecting value at line 1 "
                              "column 1)", None, 40.0, notes=["data.csv: ignored (not a notebook)"])
    data = results_for(course, record, assignment="ch11")
    assert our_contract(data) == [] and data["score"] == 0
    assert "ex1_fanout.ipynb: malformed JSON" in data["output"] and "data.csv" in data["output"]
    assert len(data["tests"]) == 13 and {t["score"] for t in data["tests"]} == {0.0}
    # A failure inside the grader shows no internals to the student.
    internal = SubmissionRecord("student", "error", "nbgrader autograde failed (exit 1): /root/secret/path", None,
                                40.0, log="/x.log")
    assert "/root/secret/path" not in json.dumps(results_for(course, internal, assignment="ch11"))
    assert our_contract(failure_results("broken", 3.0)) == []


def test_the_zip_has_the_scripts_at_its_root_and_bundles_the_course(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    (house / "fake-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (house / "image-requirements.txt").write_text("fake==1.0 --hash=sha256:00\n")
    (house / "trusted-requirements.txt").write_text("")
    out = build_zip(tmp_path / "autograder.zip", visibility="after_published", wheelhouse=house)
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in archive.infolist()}
        config = json.loads(archive.read("ch11/config.json"))
        setup = archive.read("setup.sh").decode()
    assert {"setup.sh", "run_autograder", "ch11/config.json", "ch11/course/nbgrader_config.py",
            "ch11/wheelhouse/fake-1.0-py3-none-any.whl", "ch11/wheelhouse/image-requirements.txt"} <= names
    assert {f"ch11/course/source/ch11/{p.name}" for p in SOURCE_DIR.glob("*.ipynb")} <= names
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert all(not n.startswith(("/", "..")) and ".." not in n.split("/") for n in names)
    assert config == {"assignment": "ch11", "timeout": 1500.0, "visibility": "after_published"}
    # Installs only from the bundled wheels, pinned by hash.
    commands = [line for line in setup.splitlines() if not line.lstrip().startswith("#")]
    flags = next(line for line in commands if line.startswith("PIP_FLAGS="))
    assert "--no-index" in flags and "--require-hashes" in flags
    installs = [line for line in commands if "pip install" in line]
    assert len(installs) == 2 and all('"${PIP_FLAGS[@]}"' in line for line in installs)
    with pytest.raises(ValueError, match="visibility"):
        build_zip(tmp_path / "x.zip", visibility="public", wheelhouse=house)


# --------------------------------------------------------------------------- real runs in containers


def _autograder_dirs(tmp_path: Path, zip_path: Path, notebooks: dict[str, bytes]) -> Path:
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")  # our own zip, names checked above
    for name in ("setup.sh", "run_autograder"):
        path = root / "source" / name
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (root / "submission").mkdir()
    for name, data in notebooks.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_bytes(data)
    (root / "results").mkdir()
    return root


def _docker_run(root: Path, image: str, command: str) -> subprocess.CompletedProcess:
    argv = ["docker", "run", "--rm", "--network", "none", "--memory", "4g", "--pids-limit", "1024",
            "-v", f"{root / 'source'}:/autograder/source", "-v", f"{root / 'submission'}:/autograder/submission",
            "-v", f"{root / 'results'}:/autograder/results", "-w", "/autograder",
            "--entrypoint", "bash", image, "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
@pytest.mark.docker
def test_run_autograder_in_the_grading_image(tmp_path, tmp_path_factory, inputs):
    image = batch_support.grading_image()
    course, _, _ = batch_support.graded_demo_class(tmp_path_factory.getbasetemp())
    house = tmp_path / "house"
    house.mkdir()  # the image is already installed: run_autograder needs no wheels
    zip_path = build_zip(tmp_path / "autograder.zip", wheelhouse=house)
    notebooks = {p.name: p.read_bytes() for p in (inputs / "class" / "lin" / "ch11").glob("*.ipynb")}
    notebooks["extra/scratch.txt"] = b"my notes"
    root = _autograder_dirs(tmp_path, zip_path, notebooks)
    done = _docker_run(root, image, "cp source/run_autograder /autograder/run_autograder && /autograder/run_autograder")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((root / "results" / "results.json").read_text())
    assert our_contract(data) == []
    # The same scores, cell by cell, as the batch run of the demo class outside the image.
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        expected = {f"{nb.name}: {task_name(g.name)}": g.score for nb in gb.find_submission("ch11", "lin").notebooks
                    for g in nb.grades if g.cell.cell_type == "code"}
    assert {t["name"]: t["score"] for t in data["tests"]} == expected
    assert data["score"] == 36.73 and "extra/scratch.txt: ignored (not a notebook)" in data["output"]
    assert _leaks(data, _hidden_test_lines(SOURCE_DIR)) == []
    assert "status: graded" in done.stdout  # instructor-only stdout carries the grading log


@pytest.mark.slow
@pytest.mark.docker
def test_setup_sh_installs_without_network_then_grades(tmp_path, inputs):
    base = batch_support.base_image()
    zip_path = build_zip(tmp_path / "autograder.zip")  # the real wheelhouse
    ada = inputs / "class" / "ada" / "ch11"
    broken = (ada / "ex1_fanout.ipynb").read_bytes()[:500]
    root = _autograder_dirs(tmp_path, zip_path, {"ex1_fanout.ipynb": broken,
                                                 "ex2_finite_difference.ipynb": (ada / "ex2_finite_difference.ipynb"
                                                                                 ).read_bytes()})
    done = _docker_run(root, base, "bash /autograder/source/setup.sh && cp /autograder/source/run_autograder "
                                   "/autograder/run_autograder && /autograder/run_autograder && "
                                   "stat -c '%a %U' /autograder/source /opt/ch11/trusted && id ch11s7")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "setup.sh: done" in done.stdout
    assert "700 root\n700 root\n" in done.stdout and "uid=20007(ch11s7)" in done.stdout
    data = json.loads((root / "results" / "results.json").read_text())
    assert our_contract(data) == []
    assert data["score"] == 0 and "ex1_fanout.ipynb: malformed JSON" in data["output"]
    assert data["extra_data"]["status"] == "error"


# --------------------------------------------------------------------------- the results' first line


def _captured_text(exercise: str, label: str, grade_id: str) -> str:
    """A test cell's verdict text as the grader wrote it for a catalogue submission (tests/behaviour)."""
    from behaviour import capture
    from ch11_autograder.trusted.verdict_page import verdict_text

    return verdict_text({"outputs": capture.read_catalogue_fixture(exercise)[f"{exercise}/{label}"][grade_id]})


def test_the_first_line_is_the_feedback_pages_own():
    """Gradescope's first line comes from the feedback page's code (``verdict_page``): a correct submission's
    one line; a stub's task reworded as the page's top line says it, not the cell's long not-answered text;
    otherwise the first failing cell's first thing to fix."""
    from ch11_autograder.gradescope.results import _first_line, _test
    from ch11_autograder.trusted.verdict_page import notebook_line, read_verdict_text

    full = _captured_text("ex4", "reference", "ex4_audit_marks_tests")
    stub = _captured_text("ex4", "stubs", "ex4_audit_marks_tests")
    wrong = _captured_text("ex4", "general_dag", "ex4_audit_marks_tests")
    name = "ex4_audit: audit_marks"
    assert _first_line([_test(name, "1.1", 4.0, 4.0, full, "visible")], 4.0, 4.0) == \
        notebook_line([(name, read_verdict_text(full))], 4.0, 4.0)[0] == "Every autograded check passed: 4 / 4"
    assert stub.startswith("[NOT ANSWERED]")
    assert _first_line([_test(name, "1.1", 0.0, 4.0, stub, "visible")], 0.0, 4.0) == \
        f"{name}: not answered yet (it still raises NotImplementedError)."
    line = _first_line([_test(name, "1.1", 3.2, 4.0, wrong, "visible")], 3.2, 4.0)
    assert line == f"{name}: {wrong.splitlines()[0]}" and wrong.startswith("First thing to fix: audit_marks")
