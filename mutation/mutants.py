"""Single-site mutants of the answer cells, made with mutmut's operators and the ones it lacks.

What a student writes is mutated: the solution regions (``### BEGIN SOLUTION`` ..
``### END SOLUTION``) of the source notebooks' answer cells, plus the signature of each
answered function (its default arguments are part of the contract and the student's cell
holds them). Figure cells (the registry's ``worker_skip_cells``) are left out: they are
graded by hand.

The operators are mutmut's (``mutmut.mutation.mutators.mutation_operators``) and so is the
choice of nodes (``mutmut.mutation.file_mutation.MutationVisitor``: no annotations, no
docstrings, no ``len``/``isinstance`` calls, only simple default values); the
``covered_lines`` argument of that visitor restricts it to the lines above. Then the
operators mutmut lacks (:mod:`mutation.operators`) run on the same lines. Each operator
runs on its own so that every mutant knows the operator that made it.

A mutant's id is ``function/operator/hash``: the qualified name of the innermost enclosing
function, mutmut's operator name without its ``operator_`` prefix, and 8 hex digits of the
SHA-256 of the changed lines before and after. It does not depend on line numbers or on the
order of generation, so it survives regeneration and edits elsewhere in the cell; the rare
identical change twice in one function gets ``~2``, ``~3``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.file_mutation import MutationVisitor, deep_replace
from mutmut.mutation.mutators import mutation_operators
from mutmut.mutation.pragma_handling import IgnoredCode

from .operators import OPERATORS, choice_groups, mutations

__all__ = [
    "OPERATOR_NAMES",
    "AnswerCell",
    "Mutant",
    "answer_cells",
    "mutants_of_cell",
    "mutants_of_exercise",
    "notebook_code",
]

#: Every operator's name as mutant ids and the results spell it: mutmut's (without ``operator_``), then ours.
OPERATOR_NAMES = (
    *(operator.__name__.removeprefix("operator_") for _, operator in mutation_operators),
    *OPERATORS,
)

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "source" / "ch11"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


@dataclass(frozen=True)
class AnswerCell:
    """One autograded answer cell as a student who solved it has it.

    Attributes:
        grade_id: the cell's nbgrader grade id.
        code: the source without the solution markers (``submissions.strip_solution_markers``).
        mutable_lines: 1-based lines of ``code`` that may be mutated: the solution regions and
            the signatures of the functions the cell defines at top level.
    """

    grade_id: str
    code: str
    mutable_lines: frozenset[int]


@dataclass(frozen=True)
class Mutant:
    """One single-site change of one answer cell.

    Attributes:
        id: stable id (see the module docstring).
        exercise: registry key, e.g. ``"ex5"``.
        cell: grade id of the mutated answer cell.
        function: qualified name of the innermost function around the change.
        operator: mutmut's operator, without the ``operator_`` prefix.
        line: 1-based line of the change in the cell as the student has it.
        diff: the changed lines, ``before -> after`` on one line.
        source: the whole mutated cell.
    """

    id: str
    exercise: str
    cell: str
    function: str
    operator: str
    line: int
    diff: str
    source: str = field(repr=False)

    def record(self) -> dict:
        """The mutant as JSON-ready data, without the mutated source."""
        data = asdict(self)
        del data["source"]
        return data


def _notebook(exercise: str) -> dict:
    from ch11_autograder.exercises import exercise as lookup

    return json.loads((SOURCE / f"{lookup(exercise).notebook}.ipynb").read_text())


def notebook_code(exercise: str) -> list[str]:
    """The source of every code cell of ``exercise``'s source notebook (where its choice types are declared)."""
    return ["".join(c["source"]) for c in _notebook(exercise)["cells"] if c["cell_type"] == "code"]


def answer_cells(exercise: str) -> list[AnswerCell]:
    """The answer code cells of ``exercise``'s source notebook, in notebook order, figures excluded."""
    from ch11_autograder.exercises import exercise as lookup

    entry = lookup(exercise)
    notebook = _notebook(exercise)
    cells = []
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] != "code" or not meta.get("solution") or meta["grade_id"] in entry.worker_skip_cells:
            continue
        cells.append(_strip(meta["grade_id"], "".join(cell["source"])))
    return cells


def _strip(grade_id: str, marked: str) -> AnswerCell:
    """Remove the markers, remembering which of the remaining lines were inside a solution region."""
    kept: list[str] = []
    inside: set[int] = set()
    in_region = False
    for line in marked.splitlines(keepends=True):
        if line.strip() == BEGIN:
            in_region = True
            continue
        if line.strip() == END:
            in_region = False
            continue
        kept.append(line)
        if in_region:
            inside.add(len(kept))
    code = "".join(kept)
    return AnswerCell(grade_id, code, frozenset(inside | _signature_lines(code)))


def _signature_lines(code: str) -> set[int]:
    """Lines of each top-level ``def`` from its first line up to (not including) its body."""
    wrapper = MetadataWrapper(cst.parse_module(code))
    positions = wrapper.resolve(PositionProvider)
    lines: set[int] = set()
    for statement in wrapper.module.body:
        if isinstance(statement, cst.FunctionDef):
            first = positions[statement].start.line
            body = positions[statement.body.body[0]].start.line
            lines.update(range(first, body))
    return lines


class _Functions(cst.CSTVisitor):
    """Line spans of every function definition, with qualified names."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str]] = []
        self._stack: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._stack.append(node.name.value)
        where = self.get_metadata(PositionProvider, node)
        self.spans.append((where.start.line, where.end.line, ".".join(self._stack)))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()


def _enclosing(spans: list[tuple[int, int, str]], line: int) -> str:
    inner = [(end - start, name) for start, end, name in spans if start <= line <= end]
    return min(inner)[1] if inner else "<cell>"


def _one_line_diff(before: str, after: str) -> str:
    removed, added = [], []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        (removed if line.startswith("-") else added).append(line[1:].strip())
    return f"{' | '.join(removed)}  ->  {' | '.join(added) if added else '(removed)'}"


def _mutmut(cell: AnswerCell) -> Iterator[tuple[str, int, str]]:
    """(operator, line, mutated source) for every mutation mutmut's operators make on ``cell``'s mutable lines."""
    for node_type, operator in mutation_operators:
        wrapper = MetadataWrapper(cst.parse_module(cell.code))
        visitor = MutationVisitor(
            [(node_type, operator)], IgnoredCode(set(), set(), set()), covered_lines=set(cell.mutable_lines)
        )
        module = wrapper.visit(visitor)
        positions = wrapper.resolve(PositionProvider)
        name = operator.__name__.removeprefix("operator_")
        for mutation in visitor.mutations:
            mutated = deep_replace(module, mutation.original_node, mutation.mutated_node)
            assert isinstance(mutated, cst.Module)
            yield name, positions[mutation.original_node].start.line, mutated.code


def _own(cell: AnswerCell, choices: tuple[tuple[str, ...], ...]) -> Iterator[tuple[str, int, str]]:
    """The same for the operators of :mod:`mutation.operators`."""
    for name in OPERATORS:
        for mutation in mutations(cell.code, name, cell.mutable_lines, choices):
            yield name, mutation.line, mutation.source


def mutants_of_cell(
    exercise: str, cell: AnswerCell, choices: tuple[tuple[str, ...], ...] = (), operators: Collection[str] = ()
) -> Iterator[Mutant]:
    """Every mutant the operators make on ``cell``'s mutable lines: mutmut's, then ours, in source order per operator.

    ``choices`` are the notebook's groups of interchangeable literals (``swap_literal``);
    ``operators`` restricts the operators by name (empty: all). A mutant whose source does not
    compile (none is known; libcst keeps syntax) is skipped.
    """
    wrapper = MetadataWrapper(cst.parse_module(cell.code))
    functions = _Functions()
    wrapper.visit(functions)
    seen: dict[str, int] = {}
    wanted = set(operators or OPERATOR_NAMES)
    mutmut = _mutmut(cell) if wanted - set(OPERATORS) else iter(())  # mutmut's pass is the slow one: skip it unasked
    for name, line, source in (*mutmut, *_own(cell, choices)):
        if name not in wanted or source == cell.code:
            continue
        try:
            compile(source, cell.grade_id, "exec")
        except SyntaxError:
            continue
        function = _enclosing(functions.spans, line)
        diff = _one_line_diff(cell.code, source)
        digest = hashlib.sha256(diff.encode()).hexdigest()[:8]
        base = f"{function}/{name}/{digest}"
        seen[base] = seen.get(base, 0) + 1
        mutant_id = base if seen[base] == 1 else f"{base}~{seen[base]}"
        yield Mutant(mutant_id, exercise, cell.grade_id, function, name, line, diff, source)


def mutants_of_exercise(exercise: str, operators: Collection[str] = ()) -> list[Mutant]:
    """Every mutant of every answer cell of ``exercise``, in notebook order (``operators``: only those, by name)."""
    choices = choice_groups(notebook_code(exercise))
    return [m for cell in answer_cells(exercise) for m in mutants_of_cell(exercise, cell, choices, operators)]
