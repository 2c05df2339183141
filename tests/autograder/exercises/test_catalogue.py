"""The catalogue's kill table as feedback reads it (exercises/catalogue.py): rows per entry, a name's rows,
and a table that is not one stopping the suites' import with its path."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from ch11_autograder.exercises.catalogue import (
    KILL_TABLE,
    WrongAnswer,
    fails_of,
    kill_table_path,
    kill_table_row,
    misconception,
)


def _entries(tmp_path, names):
    """Entries whose functions live in a module of ``tmp_path``, so that the kill table read is ``tmp_path``'s."""
    source = "\n".join(f"def {name}(x):\n    return x + 1\n" for name in names)
    path = tmp_path / "wrong_answers_for_test.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"_catalogue_test_{tmp_path.name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [WrongAnswer(name, name.title(), "advice", "cell", "f", ("f_tests",), getattr(module, name))
            for name in names]


def test_rows_are_read_per_entry_and_a_name_carries_them(tmp_path):
    first, second = _entries(tmp_path, ["first", "second"])
    assert kill_table_path(first) == tmp_path / KILL_TABLE
    (tmp_path / KILL_TABLE).write_text('{"first": {"f_tests": ["a", "b"]}}\n')
    assert kill_table_row(first) == {"f_tests": frozenset({"a", "b"})}
    assert kill_table_row(second) is None  # not graded yet (a new entry before make release)
    assert misconception(first).fails == ({"f_tests": frozenset({"a", "b"})},)
    # A name standing for both is held to rows only when each has one: else the evidence decides alone.
    assert fails_of([first, second]) == ()
    assert misconception(second).fails == ()


def test_no_table_yet_means_no_rows(tmp_path):
    (entry,) = _entries(tmp_path, ["lonely"])
    assert kill_table_row(entry) is None and fails_of([entry]) == ()


@pytest.mark.parametrize("text", ["not json", '["a list"]', '{"first": ["cells", "not", "a", "mapping"]}',
                                  '{"first": {"f_tests": "ab"}}', '{"first": {"f_tests": [1]}}'])
def test_a_file_that_is_no_kill_table_stops_with_its_path(tmp_path, text):
    (entry,) = _entries(tmp_path, ["first"])
    (tmp_path / KILL_TABLE).write_text(text)
    with pytest.raises(ValueError, match=f"{tmp_path / KILL_TABLE} is not a kill table.*authoring.kill_table"):
        kill_table_row(entry)


def test_the_entries_that_keep_state_are_the_memos_and_their_names_say_so():
    """keeps_state finds the catalogue's stateful entries (a memo in a shared default), and a misconception made
    from an entry, directly or through a downstream function, carries it (``Misconception.history``)."""
    from ch11_autograder.exercises import EXERCISES
    from ch11_autograder.exercises.catalogue import catalogue, seen_through
    from ch11_autograder.exercises.ex2.suite import STATEFUL as EX2_STATEFUL
    from ch11_autograder.exercises.ex3.suite import STATEFUL as EX3_STATEFUL

    stateful = {e.name for exercise in EXERCISES for e in catalogue(exercise.key) if e.keeps_state}
    assert stateful == {"tape_memoized_by_value", *EX2_STATEFUL, *EX3_STATEFUL}
    for exercise in EXERCISES:
        for e in catalogue(exercise.key):
            assert misconception(e).history == e.keeps_state
            assert seen_through(e, lambda f: f).history == e.keeps_state
