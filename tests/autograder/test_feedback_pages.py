"""One student's feedback pages rendered by two processes (``trusted/feedback_pages.py``).

The split: the helper's share leaves each process the least it can (against every split,
hypothesis). The step: real ``nbgrader generate_feedback`` on a graded course of one student
with two notebooks (``batch_support.small_graded_course``), with the helper and without, and
with a helper that fails or renders from other resources: the pages are the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ch11_autograder.trusted.feedback_pages import PAGE_OVERHEAD_BYTES, helper_share
from hypothesis import given
from hypothesis import strategies as st
from support import batch_support
from support.paths import ASSIGNMENT

BIN = Path(sys.executable).parent
TAKEN = "rendered by the helper process"


@given(st.lists(st.integers(0, 10**7), max_size=8))
def test_the_helper_takes_the_last_pages_that_leave_each_process_the_least(sizes):
    share = helper_share(sizes)
    if len(sizes) < 2:
        assert share == 0
        return
    assert 1 <= share <= len(sizes) - 1
    costs = [size + PAGE_OVERHEAD_BYTES for size in sizes]

    def longer(k):
        return max(sum(costs[:-k]), sum(costs[-k:]))

    assert longer(share) == min(longer(k) for k in range(1, len(sizes)))
    assert all(longer(k) > longer(share) for k in range(1, share))  # ties: the helper takes fewer


def test_one_large_notebook_first_leaves_the_rest_to_the_helper():
    assert helper_share([10**6, 1000, 1000]) == 2
    assert helper_share([1000, 1000, 10**6]) == 1


#: Runs nbgrader's own entry point after a change made only in the helper (a forked copy of this process).
_PATCHED_NBGRADER = """
import os, sys
parent = os.getpid()
how = sys.argv.pop(1)
if how == "fails":
    from nbconvert.exporters import HTMLExporter
    render = HTMLExporter.from_filename
    def from_filename(self, *args, **kwargs):
        if os.getpid() != parent:
            raise RuntimeError("the helper broke")
        return render(self, *args, **kwargs)
    HTMLExporter.from_filename = from_filename
elif how == "hangs":
    import time
    from ch11_autograder.trusted import feedback_pages
    from nbconvert.exporters import HTMLExporter
    feedback_pages.HELPER_WAIT_SECONDS = 2.0
    render = HTMLExporter.from_filename
    def from_filename(self, *args, **kwargs):
        if os.getpid() != parent:
            time.sleep(600)
        return render(self, *args, **kwargs)
    HTMLExporter.from_filename = from_filename
elif how == "other-resources":
    from nbgrader.converters import GenerateFeedback
    resources = GenerateFeedback.init_single_notebook_resources
    def init(self, filename):
        found = resources(self, filename)
        if os.getpid() != parent:
            found["unique_key"] += "-elsewhere"
        return found
    GenerateFeedback.init_single_notebook_resources = init
from nbgrader.apps.nbgraderapp import main
sys.argv[0] = "nbgrader"
main()
"""


def _feedback(course: Path, *options: str, how: str = "as-is") -> tuple[dict[str, bytes], str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([sys.executable, "-c", _PATCHED_NBGRADER, how, "generate_feedback", ASSIGNMENT,
                           "--student", "lin", "--force", *options], cwd=course, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pages = {p.name: p.read_bytes() for p in sorted((course / "feedback" / "lin" / ASSIGNMENT).glob("*.html"))}
    return pages, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    graded = batch_support.small_graded_course(tmp_path_factory.getbasetemp())[0]
    return batch_support.copy_course(graded, tmp_path_factory.mktemp("pages") / "course")


@pytest.mark.slow
def test_the_helper_renders_the_pages_one_process_renders(course):
    alone, log = _feedback(course, "--FeedbackExporter.split=off")
    assert sorted(alone) == ["ex1_fanout.html", "ex3_block_length.html"] and TAKEN not in log
    split, log = _feedback(course, "--FeedbackExporter.split=on")
    assert log.count(TAKEN) == 1, log[-3000:]
    assert split == alone


@pytest.mark.slow
@pytest.mark.parametrize("how", ["fails", "hangs", "other-resources"])
def test_a_page_the_helper_could_not_render_as_asked_is_rendered_here(course, how):
    alone, _ = _feedback(course, "--FeedbackExporter.split=off")
    split, log = _feedback(course, "--FeedbackExporter.split=on", how=how)
    assert TAKEN not in log, log[-3000:]
    if how == "fails":
        assert "the helper stopped" in log and "RuntimeError: the helper broke" in log, log[-3000:]
    if how == "hangs":
        assert "the helper did not finish ex3_block_length.ipynb within 2 s" in log, log[-3000:]
        assert not batch_support.processes_under(course), "the hanging helper was left running"
    assert split == alone
