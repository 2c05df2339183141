"""Every clause of every graded function's docstring contract maps to a property that checks it.

The graded functions are the public ``def``s with a docstring in the source notebooks' solution
cells (a figure cell's undocumented drawing helpers are not graded); their contracts are those
docstrings and signatures, exactly as the released stubs show them. From them this test
derives the clauses each exercise's ``CONTRACT`` table (``exercises/<key>/contract.py``) must
contain:

* one ``raises`` clause per exception of the ``Raises:`` section and per argument the entry
  names (an entry naming no argument needs one clause for that exception);
* one ``default`` clause per parameter with a default value;
* one ``accepts`` clause per parameter;
* one ``returns`` and one ``purity`` clause per function;
* a ``tie-break`` clause where the docstring speaks of ties, a ``tolerance`` clause where it
  states an accuracy.

Every property a clause names must exist in a registered suite. The table is the reviewer's
view of the suite: a clause without a property, or a property named wrongly, fails here.
The other course's exercise (``tests/other_course/``) is held to the same rules, read from the
notebook its builder makes (the chapter's are read as committed in ``source/ch11/``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from dataclasses import dataclass

import nbformat
import pytest
from ch11_autograder.exercises import EXERCISES
from ch11_autograder.trusted.contract import Clause, missing_properties
from ch11_autograder.trusted.registry import load_suite_modules, registered
from support.exercise_grading import ALL_EXERCISES, source_notebook
from support.paths import SOURCE_DIR

BY_STEM = {exercise.notebook: exercise for exercise in ALL_EXERCISES}
STEMS = tuple(BY_STEM)

_SECTION = re.compile(
    r"^(\s*)(Args|Arguments|Parameters|Raises|Returns|Yields|Attributes|Example|Examples|Note|Notes):\s*$"
)
_ENTRY = re.compile(r"^\s*([A-Za-z_][\w, ]*?)\s*(?:\([^)]*\))?:\s")
_TIE = re.compile(r"\btie", re.IGNORECASE)
_TOLERANCE = re.compile(r"tolerance|\bulps?\b|rtol|atol|bit[- ]for[- ]bit|relative error|within \d", re.IGNORECASE)


@dataclass(frozen=True)
class Graded:
    """A graded function as the student reads it: name, parameters (name -> has a default), docstring."""

    name: str
    parameters: dict[str, bool]
    doc: str


def graded_functions(stem: str) -> list[Graded]:
    """Public, documented top-level functions of the source notebook's solution cells."""
    if BY_STEM[stem] in EXERCISES:
        nb = json.loads((SOURCE_DIR / f"{stem}.ipynb").read_text())
    else:
        nb = json.loads(nbformat.writes(source_notebook(BY_STEM[stem].key)))
    found: list[Graded] = []
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] != "code" or not meta.get("solution"):
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.parse(source).body:
            doc = ast.get_docstring(node) if isinstance(node, ast.FunctionDef) else None
            if doc and not node.name.startswith("_"):
                args = node.args
                positional = [*args.posonlyargs, *args.args]
                defaulted = {a.arg for a in positional[len(positional) - len(args.defaults):]}
                defaulted |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
                names = [a.arg for a in (*positional, *args.kwonlyargs)]
                found.append(Graded(node.name, {n: n in defaulted for n in names}, doc))
    return found


def sections(doc: str) -> dict[str, list[str]]:
    """Google-style docstring sections: name -> the names opening each entry (``Raises``: exceptions)."""
    out: dict[str, list[str]] = {}
    current, indent = None, None
    for line in doc.splitlines():
        match = _SECTION.match(line)
        if match:
            current, indent = match[2], None
            out.setdefault(current, [])
            continue
        if current is None or not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        if width < indent:
            current = None
            continue
        if width == indent:
            entry = _ENTRY.match(line)
            out[current].append(entry[1] if entry else "")
            out[current + ":text"] = [*out.get(current + ":text", []), line.strip()]
        else:
            texts = out.get(current + ":text", [])
            if texts:
                texts[-1] += " " + line.strip()
    return out


def required_clauses(function: Graded) -> set[tuple[str, str | None, str | None]]:
    """(kind, argument, exception) that the contract table must hold for ``function``."""
    doc, parameters = function.doc, function.parameters
    need: set[tuple[str, str | None, str | None]] = {("returns", None, None), ("purity", None, None)}
    for name, has_default in parameters.items():
        need.add(("accepts", name, None))
        if has_default:
            need.add(("default", name, None))
    parsed = sections(doc)
    for head, text in zip(parsed.get("Raises", []), parsed.get("Raises:text", []), strict=True):
        named = [p for p in parameters if re.search(rf"``{p}``|`{p}`|\b{p}\b", text.split(":", 1)[1])]
        for exception in (e.strip() for e in head.split(",") if e.strip()):
            for argument in named or [None]:
                need.add(("raises", argument, exception))
    flowing = " ".join(doc.split())  # a phrase broken over two lines of the docstring still reads as one
    if _TIE.search(flowing):
        need.add(("tie-break", None, None))
    if _TOLERANCE.search(flowing):
        need.add(("tolerance", None, None))
    return need


def _has(clauses: list[Clause], kind: str, argument: str | None, exception: str | None) -> bool:
    return any(
        c.kind == kind
        and (argument is None or c.argument == argument)
        and (exception is None or c.raises == exception)
        for c in clauses
    )


def _contract(stem: str) -> tuple[tuple[Clause, ...], list]:
    exercise = BY_STEM[stem]
    module = importlib.import_module(f"{exercise.package}.contract")
    contract = getattr(module, "CONTRACT", None)
    assert contract is not None, f"{module.__name__} declares no CONTRACT table"
    load_suite_modules([exercise.suite_module])
    suites = [s for gid, s in registered().items() if gid.startswith(exercise.key + "_")]
    return tuple(contract), suites


@pytest.mark.parametrize("stem", STEMS)
def test_every_clause_of_every_graded_function_has_a_property(stem):
    contract, suites = _contract(stem)
    functions = graded_functions(stem)
    assert functions, f"{stem}: no graded functions found in the source notebook"
    missing = []
    for function in functions:
        clauses = [c for c in contract if c.function == function.name]
        for kind, argument, exception in sorted(required_clauses(function), key=str):
            if not _has(clauses, kind, argument, exception):
                what = " ".join(x for x in (kind, argument, exception) if x)
                missing.append(f"{function.name}: {what}")
    assert not missing, f"{stem}: contract clauses with no property:\n  " + "\n  ".join(missing)
    assert not missing_properties(contract, suites), missing_properties(contract, suites)
    strays = sorted({c.function for c in contract} - {f.name for f in functions})
    assert not strays, f"{stem}: clauses for functions the notebook does not grade: {strays}"


def test_required_clauses_are_derived_from_the_docstring():
    # A docstring with a default, a Raises entry naming two arguments, and a tie: the check must
    # ask for each, and a table missing one must be reported.
    doc = """Pick.

    Tie-break: the smallest.

    Args:
        values: numbers.
        k: how many.

    Raises:
        TypeError: ``values`` or ``k`` has the wrong type.
        ValueError: ``k < 1``.
    """
    need = required_clauses(Graded("pick", {"values": False, "k": True}, inspect.cleandoc(doc)))
    assert need == {
        ("returns", None, None), ("purity", None, None), ("accepts", "values", None), ("accepts", "k", None),
        ("default", "k", None), ("raises", "values", "TypeError"), ("raises", "k", "TypeError"),
        ("raises", "k", "ValueError"), ("tie-break", None, None),
    }
    table = [Clause("pick", "raises", "k < 1", ("t/p",), argument="k", raises="ValueError")]
    assert _has(table, "raises", "k", "ValueError")
    assert not _has(table, "raises", "k", "TypeError")
    assert missing_properties(table, []) == ["pick: t/p"]


def test_a_stated_accuracy_broken_over_two_lines_still_asks_for_a_tolerance_clause():
    doc = "Mean.\n\nReturns:\n    float: the mean of the values, within\n    1e-9 of the exact value.\n"
    assert ("tolerance", None, None) in required_clauses(Graded("mean", {}, doc))
