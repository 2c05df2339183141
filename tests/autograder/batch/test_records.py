"""The batch's records: how an error names the grades the gradebook keeps (pure; no grading here)."""

from __future__ import annotations

from ch11_autograder.batch.records import EarlierGrades, format_score


def test_earlier_grades_name_the_submission_the_time_and_the_score():
    earlier = EarlierGrades("1a2b3c4d5e6f7a8b", "2026-11-20T12:00:00+00:00", 4.0, 40.0)
    assert earlier.describe("ffff") == ("gradebook keeps the grades of the earlier submission 1a2b3c4d5e6f graded "
                                        "2026-11-20 12:00:00 UTC, 4/40 autograded")
    assert earlier.describe("1a2b3c4d5e6f7a8b").startswith("gradebook keeps the grades of this same submission ")


def test_earlier_grades_without_a_time_or_score_say_so():
    earlier = EarlierGrades("1a2b3c4d5e6f7a8b", None, None, 40.0)
    assert earlier.describe("ffff") == ("gradebook keeps the grades of the earlier submission 1a2b3c4d5e6f graded "
                                        "at an unknown time")


def test_scores_read_without_float_noise():
    assert format_score(6.67 + 10 + 3.29 + 4 + 12) == "35.96"
    assert format_score(0.1 + 0.2) == "0.3" and format_score(0) == "0"
