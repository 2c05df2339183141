"""Which cells the verdict worker runs."""

from __future__ import annotations

import nbformat
from ch11_autograder.trusted.submission_cells import submission_code_cells, worker_cells
from support.paths import REPO_ROOT, SOURCE_DIR
from traitlets.config.loader import PyFileConfigLoader


def _cell(source, grade_id=None, *, grade=False, solution=False, cell_type="code"):
    cell = nbformat.v4.new_code_cell(source) if cell_type == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": grade, "solution": solution}
    return cell


def test_tests_and_skipped_cells_are_not_run():
    nb = nbformat.v4.new_notebook(
        cells=[
            _cell("import numpy as np"),
            _cell("def f(): return 1", "ex_f", solution=True),
            _cell("assert f() == 1", "ex_f_tests", grade=True),
            _cell("plot(f)", "ex_figure", solution=True),
            _cell("prose", cell_type="markdown"),
            _cell("g = 2"),
        ]
    )
    assert submission_code_cells(nb) == ["import numpy as np", "def f(): return 1", "plot(f)", "g = 2"]
    assert submission_code_cells(nb, skip={"ex_figure"}) == ["import numpy as np", "def f(): return 1", "g = 2"]


def test_visible_checks_run_where_they_stand_and_hidden_regions_never():
    hidden = "### BEGIN HIDDEN TESTS\nraise AssertionError('secret')\n### END HIDDEN TESTS"
    nb = nbformat.v4.new_notebook(
        cells=[
            _cell("import numpy as np"),
            _cell("def f(): return 1", "ex_f", solution=True),
            _cell(f"assert f() == 1\n{hidden}", "ex_f_tests", grade=True),
            _cell(f"# only a comment\n{hidden}", "ex_g_tests", grade=True),
            _cell("plot(f)", "ex_figure", solution=True),
            _cell(f"{hidden}\nassert g == 2", "ex_h_tests", grade=True),
            _cell("g = 2"),
        ]
    )
    cells = worker_cells(nb, skip={"ex_figure"})
    assert cells.sources == ("import numpy as np", "def f(): return 1", "assert f() == 1", "assert g == 2", "g = 2")
    # A cell with nothing but comments outside its hidden region has no checks to run.
    assert dict(cells.checks) == {"ex_f_tests": 2, "ex_h_tests": 3}
    assert not any("secret" in source for source in cells.sources)


def test_configured_skip_cells_are_ungraded_answer_cells_of_the_course():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO_ROOT)).load_config()
    skipped = set(config.TrustedVerdicts.worker_skip_cells)
    assert skipped, "the course skips its figure cells"
    kinds = {}
    for path in SOURCE_DIR.glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            kinds[meta.get("grade_id")] = (cell.cell_type, meta.get("solution"), meta.get("grade"))
    for grade_id in skipped:
        # A skipped cell must hold nothing a suite grades: an ungraded code answer (a figure).
        assert kinds.get(grade_id) == ("code", True, False), f"{grade_id}: {kinds.get(grade_id)}"
