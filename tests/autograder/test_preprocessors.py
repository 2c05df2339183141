"""The nbgrader preprocessors, one at a time, on in-memory notebooks (unsandboxed launcher).

Each attack that works against plain nbgrader is shown to work there first
(``determine_grade`` on the untouched cell), then shown not to survive the
preprocessor.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
import uuid

import nbformat
import pytest
from ch11_autograder.trusted import feedback
from ch11_autograder.trusted.steps import SandboxedExecute, SanitizeFeedback, StripHiddenTests, TrustedVerdicts
from ch11_autograder.trusted.steps.process import grading_process
from ch11_autograder.trusted.steps.sandboxed_execute import SANDBOX_ERROR_NAME
from ch11_autograder.trusted.steps.start_sandboxes import LOG_SANDBOXES_STARTED, start_sandboxes
from ch11_autograder.trusted.submission_cells import strip_hidden_tests, submission_code_cells, worker_cells
from ch11_autograder.trusted.suite import run_suite
from ch11_autograder.trusted.verdicts import VERDICT_METADATA_KEY
from ch11_autograder.untrusted.forkserver import ForkServerLauncher
from ch11_autograder.untrusted.launch import EXECUTION_REPORT_ENV
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell
from nbgrader.preprocessors import ClearHiddenTests
from nbgrader.utils import determine_grade
from support.toy_notebook import HIDDEN, notebook

#: Each test is one grading process: the zygotes its steps start end with it.
pytestmark = pytest.mark.usefixtures("grading_process_ends")


def verdicts(nb, tmp_path, **traits):
    pp = TrustedVerdicts(sandbox="none", call_timeout=2.0, **traits)
    nb, _ = pp.preprocess(nb, {"metadata": {"path": str(tmp_path)}, "unique_key": "toy"})
    return nb.cells[2]


# --------------------------------------------------------------------------- TrustedVerdicts


FORGED_FLOAT = {
    "output_type": "execute_result",
    "execution_count": 3,
    "metadata": {},
    "data": {"text/plain": "np.float64(2.0)"},
}
STDERR = {"output_type": "stream", "name": "stderr", "text": "DeprecationWarning: something\n"}


def test_forged_partial_credit_output_no_longer_scores(toy_suite, tmp_path):
    nb = notebook("def double(x):\n    return x + 2", test_outputs=[FORGED_FLOAT])
    assert determine_grade(nb.cells[2]) == (2.0, 2.0)  # plain nbgrader: full marks for a wrong answer
    cell = verdicts(nb, tmp_path)
    assert determine_grade(cell) == (0, 2.0)
    assert "adds instead of multiplies" in cell.outputs[0].evalue


def test_stderr_in_a_test_cell_no_longer_zeroes_it(toy_suite, tmp_path):
    nb = notebook("def double(x):\n    return 2 * x", test_outputs=[STDERR])
    assert determine_grade(nb.cells[2]) == (0, 2.0)  # plain nbgrader: a warning costs the cell
    cell = verdicts(nb, tmp_path)
    assert determine_grade(cell) == (2.0, 2.0)
    assert cell.outputs[0].text.splitlines()[1].startswith("2 of 2 checks passed")  # passing visible checks add none


def test_partial_verdict_is_what_nbgrader_records(toy_suite, tmp_path):
    cell = verdicts(notebook("def double(x):\n    return int(2 * x)"), tmp_path)
    assert determine_grade(cell) == (1.0, 2.0)  # doubles_integers holds, doubles_floats fails
    assert [o.output_type for o in cell.outputs] == ["stream", "execute_result"]
    assert "[FAIL] doubles_floats" in cell.outputs[0].text
    # Beside the outputs, the verdict as data for the class report.
    props = cell.metadata[VERDICT_METADATA_KEY]["properties"]
    assert [(p["name"], p["outcome"]) for p in props] == [("doubles_integers", "passed"), ("doubles_floats", "failed")]


def test_a_planted_verdict_record_is_replaced(toy_suite, tmp_path):
    nb = notebook("def double(x):\n    return x + 2")
    nb.cells[2].metadata[VERDICT_METADATA_KEY] = {"v": 1, "grade_id": "double_tests", "properties": [
        {"name": "doubles_integers", "outcome": "passed", "misconception": ""}]}
    cell = verdicts(nb, tmp_path)
    props = cell.metadata[VERDICT_METADATA_KEY]["properties"]
    assert "passed" not in {p["outcome"] for p in props}  # x + 2 fails every property, visible checks included
    assert "adds instead of multiplies" in {p["misconception"] for p in props}


def test_test_cell_without_a_suite_fails_closed(toy_suite, tmp_path):
    nb = notebook("def double(x):\n    return 2 * x", grade_id="unknown_tests")
    cell = verdicts(nb, tmp_path)
    assert determine_grade(cell) == (0, 2.0)
    assert "no registered property suite" in cell.outputs[0].evalue


def test_points_disagreement_is_a_configuration_error(toy_suite, tmp_path):
    nb = notebook("def double(x):\n    return 2 * x")
    nb.cells[2].metadata.nbgrader.points = 5
    with pytest.raises(ValueError, match="declares 2 points"):
        verdicts(nb, tmp_path)


def test_worker_runs_submission_code_and_visible_checks_but_never_hidden_tests():
    nb = notebook("def double(x):\n    return 2 * x")
    nb.cells.append(new_code_cell("extra = 1"))
    assert submission_code_cells(nb) == ["def double(x):\n    return 2 * x", "extra = 1"]
    cells = worker_cells(nb)
    assert cells.sources == ("def double(x):\n    return 2 * x", "assert double(3) == 6", "extra = 1")
    assert dict(cells.checks) == {"double_tests": 1}
    assert not any("secret-5f1c" in source or "graded outside" in source for source in cells.sources)


# A function whose first answer is wrong: the notebook's own check (its first call) fails, while every
# later call, all the hidden properties make, is right. Run outside the worker, the visible check
# could not count; run there verbatim, it does.
FIRST_CALL_WRONG = "calls = []\n\ndef double(x):\n    calls.append(x)\n    return 2 * x if len(calls) > 1 else 0"


def test_failing_the_notebooks_own_check_never_scores_full_marks(toy_suite, tmp_path):
    cell = verdicts(notebook(FIRST_CALL_WRONG), tmp_path)
    assert determine_grade(cell) == (1.33, 2.0)
    text = cell.outputs[0].text
    assert "[FAIL] visible_checks" in text and "AssertionError" in text
    assert 'line 1 of the code cell starting "assert double(3) == 6"' in text
    assert "secret-5f1c" not in text
    # The same answer with the check left out of the grade: full marks, which was the hole.
    verdict = run_suite(toy_suite, _LocalDouble(), 2.0)
    assert verdict.score == 2.0


class _LocalDouble:
    """The answer as the hidden properties see it after the visible check has run: always right."""

    report = ()

    def call(self, fn, *args, **kwargs):
        return 2 * args[0]


# --------------------------------------------------------------------------- hidden test regions


def test_strip_hidden_tests_only_touches_test_cells():
    nb = notebook("def double(x):\n    return 2 * x")
    nb.cells.append(new_markdown_cell("I wrote BEGIN HIDDEN TESTS here"))
    pp = StripHiddenTests()
    nb, _ = pp.preprocess(nb, {})
    assert nb.cells[2].source == "assert double(3) == 6"
    assert nb.cells[3].source == "I wrote BEGIN HIDDEN TESTS here"
    # nbgrader's ClearHiddenTests would let that markdown break feedback generation.
    with pytest.raises(RuntimeError, match="Hidden test region detected in a non-grade cell"):
        ClearHiddenTests().preprocess(notebook("x = 1\n" + HIDDEN.replace("raise", "pass #")), {})


def test_unterminated_hidden_region_is_removed_to_the_end():
    assert strip_hidden_tests("a\n### BEGIN HIDDEN TESTS\nsecret\nmore") == ("a", True)
    assert strip_hidden_tests("a\nb") == ("a\nb", False)


# --------------------------------------------------------------------------- sanitization

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 20).decode()


def display(data, metadata=None, kind="display_data"):
    out = {"output_type": kind, "data": data, "metadata": metadata or {}}
    if kind == "execute_result":
        out["execution_count"] = 1
    return out


def test_sanitize_output_keeps_only_safe_types_and_clean_html():
    out = feedback.sanitize_output(
        display(
            {
                "text/html": '<b onclick="steal()">hi</b><script>alert(1)</script>',
                "application/javascript": "alert(2)",
                "image/svg+xml": "<svg onload='alert(3)'/>",
                "text/plain": "hi",
            },
            metadata={"image/png": {"width": '1" onerror="alert(4)'}},
        )
    )
    assert out["data"] == {"text/html": "<b>hi</b>", "text/plain": "hi"}
    assert out["metadata"] == {}


def test_dropped_output_leaves_a_note():
    out = feedback.sanitize_output(display({"application/javascript": "alert(1)"}))
    assert out["data"] == {"text/plain": "[output of type application/javascript removed by the grader]"}


def test_images_must_be_strict_base64():
    good = feedback.sanitize_output(display({"image/png": PNG}))
    assert good["data"]["image/png"] == PNG
    bad = feedback.sanitize_output(display({"image/png": PNG + '" onerror="alert(1)'}))
    assert "image/png" not in bad["data"]


def test_malformed_outputs_are_replaced():
    assert feedback.sanitize_output({"output_type": "update_display_data"})["text"].startswith("[unsupported")
    assert feedback.sanitize_output({"output_type": "stream", "name": "stdin", "text": "x"})["text"].startswith(
        "[malformed"
    )
    err = feedback.sanitize_output({"output_type": "error", "ename": 1, "evalue": None, "traceback": "x"})
    assert (err["ename"], err["evalue"], err["traceback"]) == ("Error", "", [])


def test_size_caps_per_cell_and_per_notebook():
    outputs = [{"output_type": "stream", "name": "stdout", "text": "x" * 1000}] * 5
    clean = feedback.sanitize_outputs(outputs, max_cell_chars=2500)
    assert sum(len(o["text"]) for o in clean) < 2700
    assert "size limit" in clean[-1]["text"]
    budget = feedback.OutputBudget(1500)
    feedback.sanitize_outputs(outputs[:1], max_cell_chars=10_000, budget=budget)
    second = feedback.sanitize_outputs(outputs[:1], max_cell_chars=10_000, budget=budget)
    assert "truncated" in second[0]["text"] and len(second[0]["text"]) < 600


def test_feedback_html_renders_no_untrusted_script():
    nb = notebook("def double(x):\n    return 2 * x")
    nb.cells[1].outputs = [
        nbformat.from_dict(display({"text/html": "<img src=x onerror=alert('out')>"})),
        nbformat.from_dict(display({"application/javascript": "alert('js')"})),
    ]
    nb.cells.append(new_markdown_cell("<script>alert('md')</script>**bold**"))
    nb.cells.append(new_raw_cell("<script>alert('raw')</script>", metadata={"format": "text/html"}))
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {"m": {"model_name": "</script><script>alert('w')</script>"}},
            "version_major": 2,
            "version_minor": 0,
        }
    }
    unsafe_html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    assert "alert('md')" in unsafe_html and "alert('raw')" in unsafe_html  # the attack is real
    nb, _ = SanitizeFeedback().preprocess(nb, {})
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(nb)
    for tag in ("out", "js", "md", "raw", "w"):
        assert f"alert('{tag}')" not in html
    assert "<strong>bold</strong>" in html


# --------------------------------------------------------------------------- SandboxedExecute


def execute(nb, tmp_path, *, student="toy-student", notebook_name="toy", **traits):
    traits.setdefault("sandbox", "none")
    pp = SandboxedExecute(**traits)
    resources = {"metadata": {"path": str(tmp_path)}, "unique_key": notebook_name,
                 "nbgrader": {"student": student, "assignment": "toy", "notebook": notebook_name}}
    nb, _ = pp.preprocess(nb, resources)
    return nb


#: A cell that leaves its kernel alive but deaf: garbage into every inherited descriptor (the
#: kernel's sockets to the runner included) breaks the connection its replies travel on.
DEAFENING_CELL = """
import os
for _fd in range(3, 256):
    try:
        os.set_blocking(_fd, False)
        os.write(_fd, b"\\xff\\x00garbage" * 64)
    except OSError:
        pass
"""


@pytest.mark.slow
def test_a_deaf_kernel_costs_one_cell_timeout_and_says_it_stopped_responding(tmp_path):
    nb = notebook("def double(x):\n    return 2 * x\nprint('first cell done')")
    nb.cells.insert(2, new_code_cell(DEAFENING_CELL))
    nb.cells.insert(3, new_code_cell("print('never')"))
    nb.cells.insert(4, new_code_cell("print('never either')"))
    started = time.monotonic()
    nb = execute(nb, tmp_path, sandbox="bwrap", timeout=5, interrupt_grace=2.0, wall_seconds=120.0)
    elapsed = time.monotonic() - started
    assert nb.cells[1].outputs[0].text == "first cell done\n"
    error = nb.cells[1].outputs[-1]
    assert error.ename == SANDBOX_ERROR_NAME
    assert "the kernel stopped responding (it did not answer the interrupt within 2 s)" in error.evalue
    assert [o.ename for o in nb.cells[2].outputs] == ["CellTimeoutError"]
    assert nb.cells[3].outputs == [] and nb.cells[4].outputs == []
    # One cell timeout, nbclient's 4 s wait for the cell's last output, the grace, and the kernel's
    # start: well under the two timeouts (and the wall limit) that the cells after it would cost.
    assert elapsed < 40, elapsed


@pytest.mark.slow
def test_a_kernel_that_answers_the_interrupt_runs_the_later_cells(tmp_path):
    nb = notebook("def double(x):\n    return 2 * x")
    nb.cells.insert(2, new_code_cell("while True:\n    pass"))
    nb.cells.insert(3, new_code_cell("print('after the loop', double(2))"))
    nb = execute(nb, tmp_path, timeout=3, interrupt_grace=2.0)
    assert not any(o.get("ename") == SANDBOX_ERROR_NAME for o in nb.cells[1].outputs)
    assert "CellTimeoutError" in [o.get("ename") for o in nb.cells[2].outputs]
    assert nb.cells[3].outputs[0].text == "after the loop 4\n"


@pytest.mark.slow
def test_one_budget_across_a_submissions_notebooks(tmp_path, monkeypatch):
    report = tmp_path / "budget.json"
    monkeypatch.setenv(EXECUTION_REPORT_ENV, str(report))
    student = f"budget-{time.monotonic_ns()}"  # budgets live as long as the process: a student of its own
    slow = notebook("import time\ntime.sleep(60)\ndef double(x):\n    return 2 * x")
    first = execute(slow, tmp_path, student=student, notebook_name="first", submission_wall_seconds=8.0,
                    wall_seconds=60.0, timeout=60)
    second = execute(notebook("def double(x):\n    return 2 * x\nprint('ran')"), tmp_path, student=student,
                     notebook_name="second", submission_wall_seconds=8.0, wall_seconds=60.0)
    budget_words = "this submission's notebooks together may run for 8 s (its execution budget), and that was spent"
    assert budget_words in first.cells[1].outputs[-1].evalue
    assert budget_words + " before this notebook's turn, so it was not run" in second.cells[1].outputs[-1].evalue
    assert [o.output_type for o in second.cells[1].outputs] == ["error"]  # never executed
    used = json.loads(report.read_text())
    assert used["budget_seconds"] == 8.0 and used["cut"] == ["first"] and used["not_run"] == ["second"]
    assert 7.5 <= used["used_seconds"] < 20
    # Another student's submission starts with a full budget of its own.
    other = execute(notebook("def double(x):\n    return 2 * x\nprint('ran')"), tmp_path,
                    student=student + "-other", notebook_name="second", submission_wall_seconds=8.0)
    assert other.cells[1].outputs[0].text == "ran\n"


@pytest.mark.slow
def test_sandboxed_execution_copies_sanitized_outputs_only(tmp_path):
    (tmp_path / "data.txt").write_text("from a support file")
    nb = notebook(
        "from IPython.display import HTML, display\n"
        "def double(x):\n    return 2 * x\n"
        "display(HTML('<i>ok</i><script>alert(1)</script>'))\n"
        "print(open('data.txt').read())\n"
        "print('hidden visible:', 'secret-' + '5f1c' in open('submission.ipynb').read())"
    )
    nb = execute(nb, tmp_path)
    solution, test = nb.cells[1], nb.cells[2]
    assert solution.outputs[0].data["text/html"] == "<i>ok</i>"
    assert solution.outputs[1].text == "from a support file\nhidden visible: False\n"
    assert solution.execution_count == 1
    assert test.outputs == []  # the visible assert passed; the hidden region never reached the sandbox
    assert "secret-5f1c" in test.source  # the trusted notebook keeps its source


@pytest.mark.slow
def test_execution_that_runs_out_of_time_keeps_finished_cells_and_says_so(tmp_path):
    nb = notebook("def double(x):\n    return 2 * x\nprint('first cell done')")
    nb.cells.insert(2, new_code_cell("import time\ntime.sleep(60)"))
    nb = execute(nb, tmp_path, wall_seconds=8.0, timeout=60)
    assert nb.cells[1].outputs[0].text == "first cell done\n"
    error = nb.cells[1].outputs[-1]
    assert error.ename == SANDBOX_ERROR_NAME and "did not finish within 8 s" in error.evalue
    # The test cell never ran, and plain nbgrader reads "no output" as full marks: only the
    # trusted verdict that replaces these outputs decides the score.
    assert nb.cells[3].outputs == [] and determine_grade(nb.cells[3]) == (2.0, 2.0)


def test_outputs_of_cells_that_do_not_match_are_ignored():
    trusted = notebook("def double(x):\n    return 2 * x")
    trusted.cells.append(new_code_cell("y = 2"))
    expected = [(c.cell_type, c.get("id"), hashlib.sha256(c.source.encode()).hexdigest()) for c in trusted.cells]
    executed = nbformat.reads(nbformat.writes(trusted), as_version=4)
    for index, text in ((1, "ok\n"), (2, "test ran\n"), (3, "forged\n")):
        executed.cells[index].outputs = [new_output("stream", name="stdout", text=text)]
    executed.cells[3].source = "y = 3"  # the student's kernel changed the cell it ran
    copied = SandboxedExecute()._copy_outputs(trusted, executed, expected)
    assert copied == 2
    assert trusted.cells[1].outputs[0].text == "ok\n"
    assert trusted.cells[3].outputs == []


# --------------------------------------------------------------------------- start_sandboxes (pre_convert_hook)


@pytest.fixture
def running_app(monkeypatch):
    """A traitlets application as the running ``nbgrader autograde`` (its config is the hook's).

    Without a verdict cache unless a test configures one: the feedback service sets
    ``$CH11_VERDICT_CACHE`` in its process, which an earlier in-process test may have left.
    """
    from traitlets.config import Application

    monkeypatch.delenv("CH11_VERDICT_CACHE", raising=False)
    Application.clear_instance()
    app = Application.instance()
    yield app
    Application.clear_instance()
    grading_process().close_kept_for_plan()
    lane = grading_process().made_launcher("bwrap", fork=True, own_sandbox=True)
    if lane is not None:
        lane.close()


def _settings(app, **traits):
    from traitlets.config import Config

    config = Config({"SandboxedExecute": {"sandbox": "bwrap"}, "TrustedVerdicts": {"sandbox": "bwrap"},
                     "ExecutionAhead": {"workers": 1}, "SuitesAhead": {"enabled": True}})
    for name, value in traits.items():
        cls, trait = name.split("__")
        config[cls][trait] = value
    app.update_config(config)
    # To caplog, at INFO as nbgrader logs: the application's logger is one per class name, and an earlier
    # application of the process may have left it at another level, or not propagating.
    app.log.setLevel(logging.INFO)
    app.log.propagate = True


def _until(predicate, seconds=120.0):
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def test_the_hook_starts_the_zygotes_the_plan_and_the_lane_then_use(running_app, caplog):
    from ch11_autograder.untrusted.choose import choose_launcher
    from ch11_autograder.untrusted.launch import SandboxUnavailable

    try:
        choose_launcher("bwrap")
    except SandboxUnavailable as exc:
        pytest.skip(f"bubblewrap sandbox unavailable on this machine: {exc}")
    _settings(running_app)
    # The process's lane launcher may have served earlier tests: count from here, for a student of this test's own.
    student = f"ann-{uuid.uuid4().hex[:8]}"
    earlier = grading_process().made_launcher("bwrap", fork=True, own_sandbox=True)
    lane_starts = earlier.zygote_starts if isinstance(earlier, ForkServerLauncher) else 0
    with caplog.at_level("INFO"):
        start_sandboxes(assignment="toy", student=student, notebooks=["a.ipynb"])
    assert f"{LOG_SANDBOXES_STARTED}: executions, suites" in caplog.text
    lane = grading_process().made_launcher("bwrap", fork=True, own_sandbox=True)
    assert isinstance(lane, ForkServerLauncher)
    plan = grading_process().take_for_plan(("toy", student))  # what the plan's first worker takes
    assert plan is not None and grading_process().take_for_plan(("toy", student)) is None  # taken once
    try:
        _until(lambda: plan.zygote_starts == 1 and lane.zygote_starts == lane_starts + 1)
        assert (plan.submission, lane.submission, plan.runs, lane.runs) == (("toy", student),) * 2 + ("all", "workers")
    finally:
        plan.close()


@pytest.mark.parametrize(
    "settings",
    [
        {"ExecutionAhead__workers": 0, "SuitesAhead__enabled": False},  # the command line turned both off
        {"VerdictCache__directory": "/tmp/ch11-verdict-cache-test"},  # a cached notebook starts no sandbox
        {"SandboxedExecute__fork_from_zygote": False, "TrustedVerdicts__fork_from_zygote": False},
    ],
)
def test_the_hook_starts_nothing_the_steps_will_not_use(running_app, caplog, settings):
    _settings(running_app, **settings)
    with caplog.at_level("INFO"):
        start_sandboxes(assignment="toy", student="bob", notebooks=["a.ipynb"])
    assert LOG_SANDBOXES_STARTED not in caplog.text
    assert grading_process().take_for_plan(("toy", "bob")) is None
    lane = grading_process().made_launcher("bwrap", fork=True, own_sandbox=True)
    assert lane is None or lane.submission != ("toy", "bob")  # the lane's launcher was not made ready for bob


@pytest.mark.parametrize("student", ["", "*", "a?n", "[ab]nn"])
def test_the_hook_starts_nothing_without_one_named_student(running_app, caplog, student):
    # nbgrader passes --student as given: a pattern names no one submission (`nbgrader autograde ch11`: "*").
    _settings(running_app)
    with caplog.at_level("INFO"):
        start_sandboxes(assignment="toy", student=student, notebooks=["a.ipynb"])
    assert LOG_SANDBOXES_STARTED not in caplog.text
    assert grading_process().take_for_plan(("toy", student)) is None


def test_the_hook_starts_nothing_without_an_application(caplog):
    from traitlets.config import Application

    Application.clear_instance()
    with caplog.at_level("INFO"):
        start_sandboxes(assignment="toy", student="ann", notebooks=["a.ipynb"])
    assert LOG_SANDBOXES_STARTED not in caplog.text
    assert grading_process().take_for_plan(("toy", "ann")) is None
