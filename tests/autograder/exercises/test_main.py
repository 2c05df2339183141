"""`python -m ch11_autograder.exercises`: the report lists every autograded cell of the course, with its points."""

from __future__ import annotations

from ch11_autograder.authoring.points import graded_cells
from ch11_autograder.exercises.__main__ import describe, main


def test_every_autograded_cell_has_a_suite_with_its_points():
    auto = {c.grade_id: c.points for c in graded_cells() if c.kind == "auto"}
    rows = {grade_id: (props, pts) for _, grade_id, props, pts, _ in describe()}
    assert set(rows) == set(auto)
    for grade_id, (props, pts) in rows.items():
        assert pts == auto[grade_id], grade_id
        assert props >= 2, f"{grade_id}: a single property cannot give partial credit"


def test_report_prints_totals(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "ex5:" in out and "catalogued wrong answers" in out
