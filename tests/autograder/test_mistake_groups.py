"""Grouping a class's failing answers by behaviour (``trusted.mistake_groups``), on verdict records.

The records here are ``CellVerdict.record()`` of verdicts built in this process: the grouping reads
nothing else. Real graded records: ``tests/autograder/report/test_mistakes_report.py``.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from ch11_autograder.trusted.mistake_groups import answer_from_records, group_answers
from ch11_autograder.trusted.verdicts import CellVerdict, Failure

PROPS = {"a_tests": [("p", "P"), ("q", "Q")], "b_tests": [("r", "R")], "report_tests": [("s", "S")]}


def record(grade_id, *failures):
    return CellVerdict.from_results(grade_id, 2, PROPS[grade_id], list(failures)).record()


def wrong(prop, x, got, named=""):
    return Failure(prop, prop.upper(), "mismatch", inputs={"x": x}, expected=2 * x, got=got, misconception=named,
                   advice="do" if named else "")


# Two mistakes: A in cell a (and the report, which calls it), B in cell b (and the report).
A = [record("a_tests", wrong("p", 1, 3, "adds")), record("report_tests", wrong("s", 1, 30))]
B = [record("b_tests", wrong("r", 2, 0)), record("report_tests", wrong("s", 1, 40))]
BOTH = [record("a_tests", wrong("p", 1, 3, "adds")), record("b_tests", wrong("r", 2, 0)),
        record("report_tests", wrong("s", 1, 70))]  # fmt: skip
CORRECT = [record("a_tests"), record("b_tests"), record("report_tests")]


def groups_of(classes):
    return group_answers(answer_from_records(student, records) for student, records in classes.items())


def test_same_failures_share_a_group_and_a_mix_is_in_both():
    groups = groups_of({"ada": A, "bob": A, "cy": B, "dan": BOTH, "eve": CORRECT})
    assert [g.students for g in groups] == [("ada", "bob", "dan"), ("cy", "dan")]
    first = groups[0]
    assert first.cells == ("a_tests", "report_tests") and first.named == "adds"  # one title named, on cell a
    assert first.representative.input_text() == "x=1" and first.representative.got == "3"
    assert first.representative.expected == "2"


def test_the_representative_comes_from_a_member_showing_the_whole_signature():
    # X and Y meet in cell a, where the student making both fails a third way; that student is first by id.
    x = [record("a_tests", wrong("p", 1, 30)), record("b_tests", wrong("r", 2, 0))]
    y = [record("a_tests", wrong("p", 1, 40)), record("report_tests", wrong("s", 1, 5))]
    both = [record("a_tests", wrong("p", 1, 70)), record("b_tests", wrong("r", 2, 0)),
            record("report_tests", wrong("s", 1, 5))]  # fmt: skip
    groups = groups_of({"abe": both, "bob": x, "cy": y})
    assert [g.students for g in groups] == [("abe", "bob"), ("abe", "cy")]
    assert [g.representative.got for g in groups] == ["30", "40"]
    assert [g.first.prop for g in groups] == ["p", "p"]


def test_a_group_names_the_misconception_its_failures_named():
    only_a = [record("a_tests", wrong("p", 1, 3, "adds"))]
    (group,) = groups_of({"ada": only_a, "bob": only_a})
    assert group.named == "adds" and group.properties == (("a_tests", "p"),)


def test_another_value_or_another_input_is_another_group():
    other_value = [record("a_tests", wrong("p", 1, 4))]
    other_input = [record("a_tests", wrong("p", 5, 3))]
    same = [record("a_tests", wrong("p", 1, 3))]
    groups = groups_of({"ada": same, "bob": other_value, "cy": other_input, "dan": same})
    assert sorted(g.students for g in groups) == [("ada", "dan"), ("bob",), ("cy",)]


def test_an_exception_message_does_not_split_a_group_but_its_type_does():
    def refused(got):
        return [record("a_tests", wrong("q", 1, got))]

    groups = groups_of({"ada": refused("ValueError: z0 is bad"), "bob": refused("ValueError: wrong z0!"),
                        "cy": refused("TypeError: z0 is bad")})
    assert sorted(g.students for g in groups) == [("ada", "bob"), ("cy",)]


def test_a_new_mistake_beside_a_known_one_is_in_its_group_and_a_group_of_its_own():
    new = [record("b_tests", wrong("r", 9, 1))]
    known_and_new = [record("a_tests", wrong("p", 1, 3, "adds")), record("b_tests", wrong("r", 9, 1))]
    groups = groups_of({"ada": [record("a_tests", wrong("p", 1, 3, "adds"))], "bob": new, "cy": known_and_new})
    assert sorted(g.students for g in groups) == [("ada", "cy"), ("bob", "cy")]


def test_unanswered_tasks_and_full_marks_are_in_no_group():
    stub = Failure("p", "P", "error", inputs={"x": 1}, raised="NotImplementedError", detail="NotImplementedError")
    assert groups_of({"ada": [record("a_tests", stub)], "bob": CORRECT}) == []


def test_the_group_id_is_the_signature_s_and_stays_as_the_class_grows():
    small = groups_of({"ada": A})
    large = groups_of({"ada": A, "bob": B, "cy": A})
    assert small[0].id == large[0].id and small[0].id != large[1].id


def test_a_record_without_examples_groups_by_outcomes():
    bare = {"v": 1, "grade_id": "a_tests", "properties": [{"name": "p", "outcome": "failed", "misconception": ""}]}
    (group,) = groups_of({"ada": [bare], "bob": [bare]})
    assert group.students == ("ada", "bob") and group.representative.got == ""


def test_a_group_is_named_only_when_every_member_s_feedback_named_it():
    # Naming is decided per student (the engine may probe each one's code): the same failures can be
    # named for one student and not for another. The group is then no catalogue entry's.
    named = [record("a_tests", wrong("p", 1, 3, "adds"))]
    unnamed = [record("a_tests", wrong("p", 1, 3))]
    (group,) = groups_of({"ada": named, "bob": unnamed})
    assert group.students == ("ada", "bob") and group.named == ""
    (group,) = groups_of({"ada": named, "bob": named})
    assert group.named == "adds"


def test_a_group_agreeing_with_a_mix_on_its_later_cell_only_holds_the_mix():
    # G fails cells a and b; the mix fails cell a otherwise (G's first cell), b exactly as G does, and the report:
    # G is a component of the mix (it agrees on b), and the report's failure is a group of its own.
    g = [record("a_tests", wrong("p", 1, 3)), record("b_tests", wrong("r", 2, 0))]
    mix = [record("a_tests", wrong("p", 1, 7)), record("b_tests", wrong("r", 2, 0)),
           record("report_tests", wrong("s", 1, 9))]  # fmt: skip
    groups = groups_of({"ada": g, "bob": g, "cy": mix})
    assert [(g.students, g.cells) for g in groups] == [(("ada", "bob", "cy"), ("a_tests", "b_tests")),
                                                       (("cy",), ("report_tests",))]


def _groups_by_the_rules(answers):
    """The groups' members as the module docstring states the rules, comparing each signature with every group
    made so far (no index): {group key: students}."""
    def cells(key):
        return {c: frozenset(s for s in key if s.grade_id == c) for c in {s.grade_id for s in key}}

    by_key = defaultdict(list)
    for answer in answers:
        if answer.failures:
            by_key[answer.signature].append(answer.student)
    groups, members = [], defaultdict(set)
    for key in sorted(by_key, key=lambda k: (len(k), sorted(k))):
        mine = cells(key)
        agreeing = {}
        for group in groups:
            theirs = cells(group)
            same = {c for c in theirs if c in mine and mine[c] == theirs[c]}
            if group != key and theirs.keys() <= mine.keys() and same:
                agreeing[group] = same
        kept = [g for g, same in agreeing.items() if not any(same < other for other in agreeing.values())]
        touched = {s.grade_id for g in kept for s in g}
        residual = frozenset(s for s in key if s.grade_id not in touched)
        for group in kept:
            members[group] |= set(by_key[key])
        if residual:
            if residual not in members:
                groups.append(residual)
            members[residual] |= set(by_key[key])
    return {key: tuple(sorted(students)) for key, students in members.items()}


#: Mistakes for the comparison below: each fails some cells, in some way.
MISTAKES = [
    {"a_tests": [("p", 1, 3)], "report_tests": [("s", 1, 30)]},
    {"b_tests": [("r", 2, 0)], "report_tests": [("s", 1, 40)]},
    {"a_tests": [("p", 1, 4)]},
    {"b_tests": [("r", 2, 9)]},
    {"a_tests": [("p", 1, 3), ("q", 2, 5)], "b_tests": [("r", 2, 1)]},
    {"report_tests": [("s", 1, 5)]},
    {"a_tests": [("q", 2, 6)], "b_tests": [("r", 2, 0)]},
]


def test_groups_are_those_of_comparing_each_answer_with_every_group():
    """On 300 answers each making one to three of a few mistakes (a cell two of its mistakes fail, it fails a way
    of its own), so that many answers combine other answers' failures in some cells and not in others: the
    groups found through the index of cells are those found by comparing with every group."""
    rng = random.Random(37)
    answers = []
    for n in range(300):
        made = sorted(rng.sample(range(len(MISTAKES)), rng.choice((1, 1, 2, 3))))
        records = []
        for cell in PROPS:
            ways = [MISTAKES[m][cell] for m in made if cell in MISTAKES[m]]
            if len(ways) > 1:  # where two mistakes meet: one failure, its value the mix's own
                ways = [[(ways[0][0][0], 1, 100 + sum(made))]]
            if ways:
                records.append(record(cell, *(wrong(prop, x, got) for prop, x, got in ways[0])))
        answers.append(answer_from_records(f"s{n:03d}", records))
    expected = _groups_by_the_rules(answers)
    found = {frozenset(g.signature): g.students for g in group_answers(answers)}
    assert len(expected) > 10 and any(len({s.grade_id for s in k}) > 1 for k in expected) and found == expected


def test_an_answer_whose_output_varies_is_grouped_by_what_it_fails_not_by_its_values():
    """Three copies of an answer whose value is random each time: the search meets other inputs and values in
    each, so by value they would be three groups of one; by the checks they fail they are one, and a
    deterministic mistake that fails the same checks stays apart, as does a varying one failing others."""
    rng = random.Random(5)

    def random_copy():
        x = rng.randint(1, 9)
        return [record("a_tests", wrong_varying("p", x, rng.random()), wrong_varying("q", x, rng.random())),
                record("b_tests")]

    other = [record("a_tests", wrong_varying("p", 3, 0.5)), record("b_tests")]
    fixed = [record("a_tests", wrong("p", 1, 3), wrong("q", 1, 3)), record("b_tests")]
    groups = groups_of({"ann": random_copy(), "ben": random_copy(), "cat": random_copy(), "dom": fixed,
                        "eli": other})
    assert [g.students for g in groups] == [("ann", "ben", "cat"), ("dom",), ("eli",)]
    shown = groups[0].representative
    assert shown.input_text() and shown.got and shown.expected  # never blank: the first member's own example


def wrong_varying(prop, x, got):
    return Failure(prop, prop.upper(), "mismatch", inputs={"x": x}, expected=2 * x, got=got, varies=True)


#: input_gradient answering a random pair on every call: each grading meets other counterexamples and values.
RANDOM_GRADIENT = '''
def input_gradient(x, y):
    return np.random.default_rng().random(2)
'''


@pytest.mark.slow
def test_three_copies_of_a_random_answer_graded_for_real_are_one_group_of_the_class_report():
    """Exercise 1's input_gradient returning random numbers, graded three times through a real worker (three
    students of one class): the report's groups (report.mistakes.class_mistakes over the verdict records)
    hold the three in one group, not one group each."""
    from ch11_autograder.report.mistakes import class_mistakes
    from support import exercise_grading

    verdicts = {}
    for student in ("ann", "ben", "cat"):
        graded = exercise_grading.grade("ex1", exercise_grading.cells("ex1", {"ex1_input_gradient": RANDOM_GRADIENT}))
        for grade_id, verdict in graded.items():
            verdicts[(student, "ex1_fanout", grade_id)] = verdict.record()["properties"]
    values = {tuple(p["example"]["got"] for p in props if p.get("example"))
              for (student, _nb, cell), props in verdicts.items() if cell == "ex1_input_gradient_tests"}
    assert len(values) == 3  # each grading saw other values: grouped by value, three groups of one
    mistakes = class_mistakes(verdicts)
    assert [m.group.students for m in mistakes] == [("ann", "ben", "cat")]
    assert mistakes[0].group.representative.obtained_text()  # the group shows what the answer gave: never blank
