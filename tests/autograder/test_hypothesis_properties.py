"""Properties over hypothesis examples (trusted/hypothesis_properties.py): shrinking, fixed and explicit
examples, examples independent of the modules a process imported, the declaration checked."""

from __future__ import annotations

import contextlib

import pytest
from ch11_autograder.trusted.hypothesis_properties import hypothesis_property
from ch11_autograder.trusted.mismatch import expect_equal
from ch11_autograder.trusted.suite import run_property
from hypothesis import strategies as st
from support.local_session import LocalSession, doubles


def test_correct_code_passes_and_wrong_code_gets_the_shrunk_minimal_counterexample():
    assert run_property(doubles, LocalSession(double=lambda x: 2 * x)) is None
    failure = run_property(doubles, LocalSession(double=lambda x: 2 * x if x < 1234 else 2 * x + 1))
    assert failure.kind == "mismatch"
    assert failure.inputs == {"x": 1234}  # shrunk to the boundary, not some random large value
    assert (failure.expected, failure.got) == (2468, 2469)
    assert failure.misconception == ""


def _drawn_examples(prop):
    seen = []
    run_property(prop, LocalSession(double=lambda x: seen.append(x) or 2 * x))
    return seen


def _import_local_module(directory, name, source):
    import importlib.util
    import sys

    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def test_examples_do_not_depend_on_which_local_modules_are_imported(tmp_path, monkeypatch):
    prop = hypothesis_property("draws", "Draws.", given={"x": st.integers(-(10**6), 10**6)}, max_examples=200)(
        lambda student, x: student.call("double", x)
    )
    before = _drawn_examples(prop)
    constants = "\n".join(f"C{i} = {424_240 + i}" for i in range(50))
    _import_local_module(tmp_path, "ch11_unrelated_constants_a", constants)
    assert _drawn_examples(prop) == before

    # Without the guard hypothesis mixes the new module's literals into its examples.
    from ch11_autograder.trusted import hypothesis_properties as suite_module

    monkeypatch.setattr(suite_module, "_without_local_constants", contextlib.nullcontext)
    unguarded = _drawn_examples(prop)
    more_constants = "\n".join(f"D{i} = {525_250 + i}" for i in range(50))
    _import_local_module(tmp_path, "ch11_unrelated_constants_b", more_constants)
    assert _drawn_examples(prop) != unguarded


def test_explicit_examples_are_always_tried():
    def double(x):
        return 2 * x + (x == 777_777)  # wrong at one point random search will not find

    def check(student, x):
        expect_equal({"x": x}, 2 * x, student.call("double", x))

    strategies = {"x": st.integers(-(10**6), 10**6)}
    searched = hypothesis_property("p", "P.", given=strategies, max_examples=50)(check)
    assert run_property(searched, LocalSession(double=double)) is None  # the gap a fixed example closes
    pinned = hypothesis_property("p", "P.", given=strategies, max_examples=50, examples=[{"x": 777_777}])(check)
    failure = run_property(pinned, LocalSession(double=double))
    assert failure.inputs == {"x": 777_777}


@pytest.mark.parametrize(
    ("given", "examples", "words"),
    [({"student": st.integers()}, (), "first parameter"), ({"x": st.integers()}, [{"y": 1}], "must name exactly")],
)
def test_hypothesis_property_checks_its_declaration(given, examples, words):
    with pytest.raises(ValueError, match=words):
        hypothesis_property("p", "P.", given=given, examples=examples)(lambda student, **kw: None)
