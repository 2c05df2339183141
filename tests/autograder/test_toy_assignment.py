"""End to end with the real nbgrader commands on a toy assignment (CH11_SANDBOX=none).

A temporary course uses the repository's nbgrader_config.py plus the toy
suite (tests/autograder/fixtures/toy/): generate_assignment, a set of
submissions (correct, stub, partial, hostile, hanging, ...), autograde,
generate_feedback. Scores are read back from the gradebook.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from support.paths import COURSE_CONFIG
from support.toy_course import TOY, make_course, nbgrader, scores, submit

pytestmark = pytest.mark.slow

HACK = "get_ipython().input_transformers_post.append(lambda lines: ['np.float64(2.0)\\n'])"

#: student -> (solution cell source or None for the untouched stub, extra cells appended after it,
#: expected score of double_tests)
SUBMISSIONS: dict[str, tuple[str | None, list[str], float]] = {
    "correct": ("def double(x):\n    return 2 * x", [], 2.0),
    "stub": (None, [], 0.0),
    "partial": ("def double(x):\n    return int(2 * x)", [], 1.0),
    "adds": ("def double(x):\n    return x + 2", [], 0.0),
    # Turns every later cell, the test cell included, into `np.float64(2.0)` in the kernel, so
    # the student's own next cell and the test cell both show that execute_result.
    "hack": ("def double(x):\n    return x + 2\n" + HACK, ["print('this cell was replaced')"], 0.0),
    "stderr": ("import sys\n\ndef double(x):\n    print('careful', file=sys.stderr)\n    return 2 * x", [], 2.0),
    "hang": ("def double(x):\n    while abs(x) > 1000:\n        pass\n    return 2 * x", [], 1.0),
    "unencodable": ("def double(x):\n    return {2 * x}", [], 0.0),
    "deleted_test": ("def double(x):\n    return 2 * x", [], 2.0),
}

#: Strings that exist only in hidden test regions or in the suite's source.
SECRETS = [
    "toy-hidden-marker-5f1c",
    "graded outside the notebook",
    "BEGIN HIDDEN TESTS",
    "toy-suite-marker-7d41",
    "_toy_reference_double",
    "expect_equal",
    "hypothesis_property",
]


def feedback(course: Path, student: str) -> str:
    return (course / "feedback" / student / "toy" / "toy.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    config = (
        "c = get_config()  # noqa: F821\n"
        f"load_subconfig({str(COURSE_CONFIG)!r})  # noqa: F821\n"
        f"c.TrustedVerdicts.suite_modules = [{str(TOY / 'toy_suite.py')!r}]\n"
        "c.TrustedVerdicts.call_timeout = 2.0\n"
    )
    root = make_course(tmp_path_factory.mktemp("course"), config)
    for student, (code, extra, _) in SUBMISSIONS.items():
        submit(root, student, code, extra, delete_test=student == "deleted_test")
    nbgrader(root, "autograde", "toy")
    nbgrader(root, "generate_feedback", "toy")
    return root


def test_every_submission_gets_its_expected_score(course):
    expected = {student: score for student, (_, _, score) in SUBMISSIONS.items()}
    assert scores(course) == expected


def test_grading_leaves_no_hypothesis_cache_in_the_course(course):
    assert not (course / ".hypothesis").exists()


def test_partial_credit_equals_the_verdict(course):
    nb = nbformat.read(course / "autograded" / "partial" / "toy" / "toy.ipynb", as_version=4)
    test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "double_tests")
    assert test.outputs[-1].data["text/plain"] == "1.0"
    assert "1 of 2 checks passed (1 / 2 points)." in test.outputs[0].text
    assert "[FAIL] doubles_floats" in test.outputs[0].text


def test_the_transformer_hack_ran_in_the_kernel_but_did_not_score(course):
    nb = nbformat.read(course / "autograded" / "hack" / "toy" / "toy.ipynb", as_version=4)
    replaced = next(c for c in nb.cells if c.source == "print('this cell was replaced')")
    assert replaced.outputs[0].data["text/plain"] == "np.float64(2.0)"  # the attack worked in the sandbox
    assert scores(course)["hack"] == 0.0


def test_feedback_names_the_failure_in_the_students_terms(course):
    adds = feedback(course, "adds")
    assert 'This matches a known mistake: "adds instead of multiplies"' in adds
    assert "inputs:   x=0" in adds and "expected: 0" in adds
    assert "did not return within 2 s, so the grader stopped it" in feedback(course, "hang")
    assert "[pass] doubles_floats" in feedback(course, "hang")
    assert "double() returned a value the grader cannot read ('set')" in feedback(course, "unencodable")
    assert "This task is not answered yet: double still raises NotImplementedError" in feedback(course, "stub")


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_feedback_never_shows_hidden_tests_or_suite_source(course, student):
    html = feedback(course, student)
    leaked = [secret for secret in SECRETS if secret in html]
    assert not leaked
    assert "Traceback (most recent call last)" not in html


def test_the_secrets_are_really_in_the_inputs(course):
    # So that the absence above means something.
    autograded = (course / "autograded" / "correct" / "toy" / "toy.ipynb").read_text()
    assert "toy-hidden-marker-5f1c" in autograded
    assert "toy-suite-marker-7d41" in (TOY / "toy_suite.py").read_text()


def test_regrading_gives_identical_scores_and_feedback_bytes(course):
    # "hang" is the most timing-exposed submission: partial credit earned next to a timeout.
    before_scores = scores(course)
    html = course / "feedback" / "hang" / "toy" / "toy.html"
    before = html.read_bytes()
    nbgrader(course, "autograde", "toy", "--force", "--student=hang")
    nbgrader(course, "generate_feedback", "toy", "--force", "--student=hang")
    assert scores(course) == before_scores
    assert html.read_bytes() == before


def test_plain_nbgrader_scores_the_hidden_cell_zero_even_for_a_correct_answer(tmp_path):
    plain = (
        "c = get_config()  # noqa: F821\n"
        "c.CourseDirectory.source_directory = 'source'\n"
        "c.CourseDirectory.release_directory = 'assignments'\n"
    )
    root = make_course(tmp_path, plain)
    submit(root, "correct", SUBMISSIONS["correct"][0], [])
    nbgrader(root, "autograde", "toy")
    assert scores(root) == {"correct": 0.0}


#: What a feedback page would load from elsewhere: a script, a stylesheet or an image by URL.
REMOTE_LOAD = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_feedback_loads_nothing_from_the_network_and_renders_math_itself(course, student):
    html = feedback(course, student)
    assert not REMOTE_LOAD.search(html), REMOTE_LOAD.search(html)
    assert "MathJax.Hub" not in html and "x-mathjax-config" not in html  # the CDN loader and its config script
    # The toy's statement has an inline and a display formula: both are MathML in the page.
    assert re.search(r'<math\b[^>]*\bdisplay="inline"', html) and re.search(r'<math\b[^>]*\bdisplay="block"', html)
    assert "<msqrt>" in html and "$d(x)" not in html


def test_the_remote_load_check_finds_what_nbgraders_own_template_loads():
    stock = '<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX"> </script>'
    assert REMOTE_LOAD.search(stock)
    assert REMOTE_LOAD.search("<link rel=stylesheet href='//cdn.example/x.css'>")
    assert not REMOTE_LOAD.search('<a href="https://example.org">a link is not a load</a>')


def test_feedback_of_an_unanswered_task_says_so_once(course):
    html = feedback(course, "stub")
    assert html.count("This task is not answered yet") == 1
    assert "[FAIL]" not in html
    nb = nbformat.read(course / "autograded" / "stub" / "toy" / "toy.ipynb", as_version=4)
    (verdict,) = nb.cells[-1].outputs
    assert verdict.evalue.count("NotImplementedError") == 1  # once, not once per property
    assert "This task is not answered yet" not in feedback(course, "adds")
