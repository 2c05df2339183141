"""What a suite is made of (trusted/cell_suite.py): a property's and a suite's declarations are checked."""

from __future__ import annotations

import pytest
from ch11_autograder.trusted.cell_suite import CellSuite, Property
from support.local_session import doubles


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"grade_id": "g", "points": 1, "properties": []}, "at least one property"),
        ({"grade_id": "g", "points": 0, "properties": [doubles]}, "points must be > 0"),
        ({"grade_id": "g", "points": 1, "properties": [doubles, doubles]}, "unique"),
    ],
)
def test_cell_suite_validation(kwargs, words):
    with pytest.raises(ValueError, match=words):
        CellSuite(**kwargs)


def test_property_description_is_one_line():
    with pytest.raises(ValueError, match="one non-empty line"):
        Property("p", "two\nlines", lambda s: None)
