"""``.ci/lanes.py``: ``make test``'s lanes run exactly ``pytest -m EXPR``'s tests, each once, and an empty lane
or a failed one fails the run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from support.paths import REPO_ROOT

MAKE_TEST_EXPR = re.search(r'^test:.*\n\t\$\(PY\) \.ci/lanes\.py -m "([^"]+)"', (REPO_ROOT / "Makefile").read_text(),
                           re.M)


def _lanes_module():
    spec = importlib.util.spec_from_file_location("ci_lanes", REPO_ROOT / ".ci" / "lanes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


lanes = _lanes_module()


#: A pytest plugin that writes every collected test's node id and marks, one JSON line each, to $CH11_LANES_MARKS.
MARKS_PLUGIN = """
import json, os
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    with open(os.environ["CH11_LANES_MARKS"], "w") as out:
        for item in items:
            out.write(json.dumps([item.nodeid, sorted({m.name for m in item.iter_markers()})]) + "\\n")
"""


def _every_test(tmp_path: Path) -> dict[str, set[str]]:
    """Every test of the suite with its marks: one collection (each lane's own would import every module again)."""
    (tmp_path / "ch11_lanes_marks.py").write_text(MARKS_PLUGIN)
    marks = tmp_path / "marks.jsonl"
    env = {**os.environ, "CH11_LANES_MARKS": str(marks),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "ch11_lanes_marks"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {nodeid: set(names) for nodeid, names in map(json.loads, marks.read_text().splitlines())}


def _selected(tests: dict[str, set[str]], args: tuple[str, ...]) -> set[str]:
    """The tests a lane's pytest arguments select, read as pytest reads ``-m``, ``--ignore=`` and paths."""
    expr, paths, ignored = None, [], []
    rest = iter(args)
    for arg in rest:
        if arg == "-m":
            expr = Expression.compile(next(rest))
        elif arg.startswith("--ignore="):
            ignored.append(arg.removeprefix("--ignore="))
        elif not arg.startswith("-"):
            paths.append(arg)
    return {nodeid for nodeid, names in tests.items()
            if (expr is None or expr.evaluate(lambda name, names=names: name in names))
            and (not paths or _under(nodeid, paths)) and not _under(nodeid, ignored)}


def _under(nodeid: str, paths: list[str]) -> bool:
    """Whether a test's file is one of ``paths`` or lies in one of them (a folder), as pytest reads its arguments."""
    file = nodeid.split("::")[0]
    return any(file == path or file.startswith(path.rstrip("/") + "/") for path in paths)


def test_make_test_runs_the_lanes():
    assert MAKE_TEST_EXPR is not None, "make test does not run .ci/lanes.py -m EXPR"
    assert (REPO_ROOT / ".ci" / "run").read_text().rstrip().endswith("exec make test")


@pytest.mark.slow
def test_the_lanes_split_make_test_s_selection_without_loss_or_overlap(tmp_path):
    assert MAKE_TEST_EXPR is not None
    expr = MAKE_TEST_EXPR.group(1)
    tests = _every_test(tmp_path)
    whole = _selected(tests, ("-m", expr))
    hub, side, main = lanes.tracks(expr, [])
    parts = [_selected(tests, lane.args) for lane in [*hub, *side, *main]]
    assert all(parts), "a lane collects no test"
    assert len(whole) > 3000
    assert sum(len(part) for part in parts) == len(whole), "a test is in two lanes"
    assert set().union(*parts) == whole
    hub_tests, after_hub, late_tests, side_tests, _main_tests = parts
    assert hub_tests and all(t.startswith(("tests/hub/", "tests/autograder/exchange/hub/")) for t in hub_tests)
    assert {t.split("::")[0] for t in after_hub} == set(lanes.AFTER_HUB)
    for folders, tests_of in ((lanes.LATE, late_tests), (lanes.SIDE, side_tests)):
        assert all(_under(t, list(folders)) for t in tests_of)
        assert {path for path in folders if any(_under(t, [path]) for t in tests_of)} == set(folders), \
            f"a folder of {folders} has no test"


@pytest.mark.parametrize(("codes", "expected"), [([0, 0, 0], 0), ([0, 5, 0], 5), ([1, 0, 0], 1), ([0, 0, 2], 2),
                                                 ([5, 1, 0], 5)])
def test_a_failed_or_empty_lane_fails_the_run(codes, expected):
    assert lanes.status(codes) == expected


def test_usage_is_refused_without_a_mark_expression(capsys):
    assert lanes.main(["tests"]) == 2
    assert "usage" in capsys.readouterr().err


def test_a_lane_that_runs_no_test_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(lanes, "ROOT", tmp_path)
    (tmp_path / "test_nothing.py").write_text("")
    ended = lanes._run(lanes.Lane("empty", ("-p", "no:cacheprovider", "test_nothing.py"), tmp_path / "empty.log"))
    assert ended.status == lanes.NO_TESTS
    assert "empty lane ended: exit 5 (it ran no test)" in capsys.readouterr().out
    assert ended.cpu > 0, "the lane's pytest process used no CPU time: os.wait4's usage was not read"
    assert lanes.status([0, ended.status]) == lanes.NO_TESTS
    assert Path(tmp_path / "empty.log").is_file()
