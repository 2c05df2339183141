"""From a mistake group to a draft catalogue entry (``ch11-grade catalogue draft``).

The instructor picks a group of ``reports/<assignment>-mistakes.json`` (its ``index`` or ``id``);
:func:`draft_entry` writes, in the format of ``exercises/<key>/wrong_answers.py``, an entry whose
function is the group's representative answer, whose ``loses`` are the group's cells, with placeholders
for the name, title and advice, and a header listing the properties it fails with the representative
counterexample.

Which function: the one the contract says the group's first failing property checks (for a cell's
visible checks, the function most of that cell's properties check); but when that function calls
another that fails properties of its own in the same group, the callee, where the fault lies
(:func:`_at_fault`). Which definition: the one grading ran (:func:`graded_definition`: the last
binding of the name in the cells the verdict worker runs, in its order, so neither a redefinition in a
figure cell grading skips nor an earlier attempt in the answer cell).

The function is student code, and catalogue entries run in the grading process (docs/authoring.md,
"From a mistake group to named feedback"). It is rebuilt from its syntax tree
(:mod:`.draft_source`): nothing of it runs when the catalogue is imported (decorators, annotations and
defaults that are not literals are removed and named in the header), identifiers outside ASCII are
renamed visibly and named, lines are wrapped. Every line of the header is escaped (``textsafe.escape``):
a student id or a value cannot start a line of code.
"""

from __future__ import annotations

import ast
import importlib
import textwrap
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from ..course_layout import AUTOGRADED, student_folder
from ..exercises import exercise as _exercise
from ..textsafe import escape
from ..trusted.submission_cells import graded_code_cells
from .draft_source import WIDTH, rebuild, wrap
from .mistakes import VISIBLE_CHECKS, exercise_of, read_mistakes

__all__ = ["DraftError", "GradedDefinition", "draft_entry", "graded_definition", "pick_group"]

#: Largest autograded notebook read, bytes.
MAX_NOTEBOOK_BYTES = 64 * 1024**2


class DraftError(ValueError):
    """The draft cannot be written; the message says what is missing and where."""


def pick_group(path: Path, which: str) -> dict[str, Any]:
    """The group of ``path`` (a mistakes JSON) whose ``index`` (digits) or ``id`` is ``which``."""
    groups = read_mistakes(path)
    for group in groups:
        if str(group.get("index")) == which or group.get("id") == which:
            return group
    raise DraftError(f"{path}: no group with index or id {which!r} (it has {len(groups)} groups)")


def _notebook(path: Path) -> Any:
    """The autograded notebook at ``path``, read as nbformat 4."""
    if not path.is_file() or path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise DraftError(f"{path}: no autograded notebook to read the answer from")
    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


def _functions_of(exercise: str, grade_id: str, prop: str) -> tuple[str, ...]:
    """The graded functions whose contract clauses the property checks, most clauses first (ties: contract
    order). The visible checks of a test cell check what the cell's properties check."""
    contract = importlib.import_module(f"{_exercise(exercise).package}.contract")
    clauses = getattr(contract, "CONTRACT", ())
    if prop == VISIBLE_CHECKS:
        found = [str(c.function) for c in clauses for check in c.checked_by if check.startswith(f"{grade_id}/")]
    else:
        found = [str(c.function) for c in clauses if f"{grade_id}/{prop}" in c.checked_by]
    counts = Counter(found)
    return tuple(sorted(counts, key=lambda name: (-counts[name], found.index(name))))


@dataclass(frozen=True)
class GradedDefinition:
    """The definition of a function that grading ran: the last statement binding its name in the code the
    verdict worker runs, in its order (``trusted.submission_cells.graded_code_cells``).

    Attributes:
        node: the ``def``.
        cell: grade_id of the cell holding it (``""``: a cell the student added).
        first_cell: grade_id of the first cell defining the function (the released answer cell).
        others: the other functions that cell defines.
    """

    node: ast.FunctionDef | ast.AsyncFunctionDef
    cell: str
    first_cell: str
    others: tuple[str, ...]


def _bindings(statement: ast.stmt) -> list[tuple[str, ast.stmt | None]]:
    """Names a top-level statement binds, each with the ``def`` that binds it (``None``: any other binding,
    or a def inside a compound statement, whose branch the draft cannot know ran)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return [(statement.name, statement)]
    found: list[tuple[str, ast.stmt | None]] = []
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append((node.name, None))
            continue  # names bound inside are local to it
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            found.append((node.id, None))
        elif isinstance(node, ast.alias):
            found.append(((node.asname or node.name).split(".")[0], None))
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            found.append((node.name, None))
        stack.extend(ast.iter_child_nodes(node))
    return found


def graded_definition(nb: Any, exercise: str, function: str, where: Path) -> GradedDefinition:
    """The definition of ``function`` that grading ran in ``nb`` (an autograded notebook of ``exercise``).

    The cells are those the verdict worker runs, in its order: every code cell but the autograded test
    cells and the exercise's ``worker_skip_cells`` (figure cells, which grading does not run). A cell that
    is not Python (IPython magics) is passed over.

    Raises:
        DraftError: no such definition, or the last binding of the name is not a plain top-level ``def``
            (an assignment, an import, a def inside ``if``/``try``...): the graded code is not one function.
    """
    last: tuple[str, ast.stmt | None, list[str]] | None = None
    first_cell = ""
    for grade_id, source in graded_code_cells(nb, set(_exercise(exercise).worker_skip_cells)):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        defs = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        for statement in tree.body:
            for name, definition in _bindings(statement):
                if name == function:
                    last = (grade_id, definition, defs)
                    if definition is not None and grade_id and not first_cell:
                        first_cell = grade_id
    if last is None:
        raise DraftError(f"{where}: no cell grading runs defines {function}()")
    cell, definition, defs = last
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
        raise DraftError(f"{where}: the {function} grading ran is bound in cell {cell or '(added by the student)'} "
                         "by an assignment, an import or a nested block, not by a def: draft it by hand")
    return GradedDefinition(definition, cell, first_cell or cell, tuple(d for d in defs if d != function))


def _called(node: ast.AST) -> list[str]:
    """Names the function calls by a plain name, in order of appearance."""
    calls = [n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return list(dict.fromkeys(calls))


def _at_fault(exercise: str, group: Mapping[str, Any], first: str, defined: Callable[[str], GradedDefinition | None]
              ) -> list[str]:
    """The chain of functions from ``first`` (checked by the group's first failing property) to the one the
    fault lies in: while the function calls another that fails properties of its own in this group, the
    callee (its caller's failure is the callee's showing through)."""
    failing: dict[str, None] = {}
    for prop in group.get("properties") or []:
        try:
            failing.update(dict.fromkeys(_functions_of(exercise, str(prop["cell"]), str(prop["property"]))))
        except (KeyError, TypeError):
            continue
    chain = [first]
    while True:
        definition = defined(chain[-1])
        callees = [name for name in _called(definition.node) if name in failing and name not in chain] \
            if definition is not None else []
        callee = next((name for name in callees if defined(name) is not None), None)
        if callee is None:
            return chain
        chain.append(callee)


def draft_entry(course: Path, assignment: str, group: Mapping[str, Any]) -> str:
    """The draft catalogue entry for ``group`` (one element of the mistakes JSON), as Python source."""
    rep = group["representative"]
    notebooks = group.get("notebooks") or []
    keys = exercise_of()
    if not notebooks or notebooks[0] not in keys:
        raise DraftError(f"group {group.get('id')}: no notebook of this assignment's exercises")
    exercise = keys[notebooks[0]]
    functions = _functions_of(exercise, str(rep["cell"]), str(rep["property"]))
    if not functions:
        raise DraftError(f"{exercise}: no contract clause is checked by {rep['cell']}/{rep['property']}")
    student = str(rep["student"])
    path = student_folder(course, AUTOGRADED, student, assignment) / f"{notebooks[0]}.ipynb"
    nb = _notebook(path)
    definitions: dict[str, GradedDefinition | None] = {}

    def defined(name: str) -> GradedDefinition | None:
        if name not in definitions:
            try:
                definitions[name] = graded_definition(nb, exercise, name, path)
            except DraftError:
                definitions[name] = None
        return definitions[name]

    chain = _at_fault(exercise, group, functions[0], defined)
    function = chain[-1]
    graded = graded_definition(nb, exercise, function, path)
    name = f"draft_{group['id']}"
    rebuilt = rebuild(graded.node, name)
    cells = tuple(str(cell) for cell in group["cells"])
    header = [
        f"Draft catalogue entry from mistake group {group['id']} of reports/{assignment}-mistakes.json:",
        f"{len(group['students'])} student(s), the representative is {student}. Its properties fail:",
        *(f"  {p['cell']}: {p['property']} ({p['outcome']})" for p in group["properties"]),
        f"Representative counterexample ({rep['cell']}: {rep['property']}):",
        f"  input:    {rep['input']}",
        f"  expected: {rep['expected']}",
        f"  obtained: {rep['obtained']}",
        f"The function is {student}'s {function}() as grading ran it (the last definition in the cells the",
        f"grader runs: {graded.cell or 'a cell the student added'}), comments dropped. It is student code: read",
        "it before adding it. Then name it (name, title, advice), add it to "
        f"exercises/{exercise}/wrong_answers.py and run make release.",
    ]
    if len(chain) > 1:
        header.append(f"The group's first failing property checks {chain[0]}(), which calls "
                      + ", which calls ".join(f"{callee}()" for callee in chain[1:])
                      + ", failing properties of its own in this group: the fault lies there, and that is drafted.")
    if functions[1:] and rep["property"] == VISIBLE_CHECKS:
        header.append(f"The visible checks of {rep['cell']} also check {', '.join(f'{f}()' for f in functions[1:])}.")
    if rebuilt.removed:
        header.append("Removed from the signature, as they would run when the catalogue is imported:")
        header += [f"  {line}" for line in rebuilt.removed]
        header.append("Restore what the mistake needs as literals or in the body.")
    if rebuilt.renamed:
        header.append("Identifiers outside ASCII, renamed (a letter of another script can read as a Latin one):")
        header += [f"  {line}" for line in rebuilt.renamed]
    if rebuilt.long_lines:
        header.append(f"Some lines are longer than {WIDTH} characters and have no bracket to break them at.")
    if graded.others:
        header.append(f"That cell also defines {', '.join(graded.others)}: an entry is one function, inline them.")
    if group.get("catalogue"):
        header.append(f"This group is already the catalogue entry {group['catalogue']}.")
    comment = "\n".join("# " + part for line in header
                        for part in textwrap.wrap(escape(line, limit=400), WIDTH - 2, subsequent_indent="    ",
                                                  break_long_words=True, break_on_hyphens=False) or [""])
    decorator = (
        "@wrong_answer(\n"
        f"    exercise={exercise!r},\n"
        '    name="TODO_name",  # an identifier, unique in the exercise\n'
        '    title="TODO: the mistake as a student would name it",\n'
        '    advice="TODO: one or two sentences: what to reconsider, and how.",\n'
        f"    answer_cell={graded.first_cell!r},\n"
        f"    replaces={function!r},\n"
        f"    loses={cells!r},\n"
        ")\n"
    )
    return f"{comment}\n\n\n{wrap(decorator + rebuilt.source)}\n"
