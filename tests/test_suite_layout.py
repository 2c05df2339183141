"""The test suite's own layout: tiers are declared where the tests are, and the package is this checkout's.

The heavy tiers (``docker``, ``hostile_batch``, ``class_batch``, ``browser``, ``exchange``, ``hub``, ``dask``,
``slurm``; tests/conftest.py) are selected by marks. A mark is written on the test or as its module's
``pytestmark``, never assigned by a conftest from a list of names: there, renaming a test silently moved it out
of its tier. What these tests hold to, read from the sources (no collection, no import):

* no conftest assigns marks (``add_marker``, a ``pytest_collection_modifyitems`` hook, or
  a tier mark written there);
* every test that reaches the grading image (``batch_support.grading_image``,
  ``base_image``, ``require_docker``) through its own code, the fixtures it requests or
  the helpers it calls is marked ``docker`` or ``hostile_batch``;
* every test that reaches the demo class graded by the batch
  (``batch_support.graded_demo_class``, or ``assert_graded_as_locally``, which compares
  with it) is marked ``class_batch`` or ``docker``;
* every test that starts Chromium or a Jupyter server (``support.browser``: ``require_browser``,
  ``chromium``, ``jupyter_server``) is marked ``browser``, ``hub`` or ``page`` (the page's hub path in a
  fresh container, driven from the host's Chromium);
* every test that starts a JupyterHub (``support.hub``: ``require_hub``, ``start_hub``) is marked ``hub``;
* every test that grades on a real Dask scheduler and workers (the ``dask_cluster`` fixture of
  tests/autograder/batch/test_cluster.py) is marked ``dask``;
* every test that starts a Slurm cluster (``support.slurm_cluster.one_node_slurm``, the
  ``slurm_cluster`` fixture of tests/slurm/test_slurm.py) is marked ``slurm``.

"Reaches" follows names within a module and its conftests: a function reaches another
when it names it (a call, a parameter naming a fixture, a string given to
``request.getfixturevalue``, or an f-string such as ``f"{request.param}_run"``, which
stands for every function whose name it can spell).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ch11_autograder import paths
from support.paths import TESTS_DIR

TIERS = frozenset({"docker", "hostile_batch", "class_batch", "browser", "exchange", "hub", "page", "dask", "slurm",
                   "readers"})

#: (what a test reaches, the names that reach it, the tiers a test reaching it must carry one of).
RULES = (
    ("the grading image", frozenset({"grading_image", "base_image", "require_docker"}),
     frozenset({"docker", "hostile_batch", "page"})),
    ("a fresh Debian container", frozenset({"fresh_machine"}), frozenset({"page"})),
    ("the demo class graded by the batch", frozenset({"graded_demo_class", "assert_graded_as_locally"}),
     frozenset({"class_batch", "docker"})),
    ("a browser or the Jupyter server", frozenset({"require_browser", "chromium", "jupyter_server"}),
     frozenset({"browser", "hub", "page"})),
    ("a JupyterHub", frozenset({"require_hub", "start_hub"}), frozenset({"hub"})),
    ("a Dask scheduler and workers", frozenset({"dask_cluster"}), frozenset({"dask"})),
    ("a Slurm controller and node", frozenset({"one_node_slurm", "slurm_cluster"}), frozenset({"slurm"})),
)


@dataclass(frozen=True)
class WrittenTest:
    """One test function of a module, with the marks written on it or on its module."""

    node_id: str
    marks: frozenset[str]
    reached: frozenset[str]


def _mark_names(node: ast.expr) -> set[str]:
    """``pytest.mark.X`` or ``pytest.mark.X(...)``, or a list or tuple of those -> {"X", ...}."""
    if isinstance(node, ast.List | ast.Tuple):
        return set().union(*(_mark_names(e) for e in node.elts))
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
        return {node.attr}
    return set()


def _module_marks(tree: ast.Module) -> set[str]:
    marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks |= _mark_names(node.value)
    return marks


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _named(function: ast.FunctionDef, known: set[str]) -> set[str]:
    """Every name ``function`` uses: identifiers, attributes, parameters, and the fixtures it asks for by string."""
    names = {a.arg for a in function.args.args + function.args.kwonlyargs}
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getfixturevalue":
            names |= _spelled(node.args[0], known)
    return names


def _spelled(argument: ast.expr, known: set[str]) -> set[str]:
    """The fixture names a ``getfixturevalue`` argument can be: its string constants, and what its f-strings match."""
    names = set()
    for node in ast.walk(argument):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
        elif isinstance(node, ast.JoinedStr):
            parts = [re.escape(p.value) if isinstance(p, ast.Constant) else r"\w*" for p in node.values]
            names |= {name for name in known if re.fullmatch("".join(parts), name)}
    return names


def _conftests(module: Path) -> Iterator[Path]:
    """The conftest.py files pytest loads for ``module``, outermost first."""
    folders = [module.parent, *module.parent.parents]
    for folder in reversed(folders[: folders.index(TESTS_DIR) + 1]):
        if (folder / "conftest.py").is_file():
            yield folder / "conftest.py"


def _reached(start: str, graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        for used in graph.get(name, set()) - seen:
            seen.add(used)
            todo.append(used)
    return seen


def _marks_by_test(tree: ast.Module) -> dict[str, set[str]]:
    """Test function name -> the marks written on it or on its module."""
    module_marks = _module_marks(tree)
    return {name: module_marks.union(*(_mark_names(d) for d in function.decorator_list))
            for name, function in _functions(tree).items() if name.startswith("test_")}


def _written_tests() -> list[WrittenTest]:
    """Every test function of every test module, with its marks and every name it reaches."""
    found = []
    for module in sorted(TESTS_DIR.rglob("test_*.py")):
        tree = ast.parse(module.read_text())
        functions: dict[str, ast.FunctionDef] = {}
        for conftest in _conftests(module):
            functions.update(_functions(ast.parse(conftest.read_text())))
        functions.update(_functions(tree))
        known = set(functions)
        graph = {name: _named(function, known) for name, function in functions.items()}
        for name, marks in _marks_by_test(tree).items():
            node_id = f"{module.relative_to(TESTS_DIR.parent).as_posix()}::{name}"
            found.append(WrittenTest(node_id, frozenset(marks), frozenset(_reached(name, graph))))
    return found


@pytest.fixture(scope="module")
def tests() -> list[WrittenTest]:
    return _written_tests()


def test_the_package_under_test_is_this_checkout():
    """The tests read the repository through ``ch11_autograder.paths``: it must name this checkout."""
    assert paths.REPO_ROOT == Path(__file__).resolve().parents[1] == TESTS_DIR.parent


def test_no_conftest_assigns_marks():
    offenders = []
    for conftest in sorted(TESTS_DIR.rglob("conftest.py")):
        for node in ast.walk(ast.parse(conftest.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "add_marker":
                offenders.append(f"{conftest}:{node.lineno}: add_marker")
            elif isinstance(node, ast.FunctionDef) and node.name == "pytest_collection_modifyitems":
                offenders.append(f"{conftest}:{node.lineno}: pytest_collection_modifyitems")
            elif isinstance(node, ast.Attribute) and _mark_names(node) & TIERS:
                offenders.append(f"{conftest}:{node.lineno}: {ast.unparse(node)}")
    assert not offenders, "tiers are marked on the tests, not assigned in a conftest:\n" + "\n".join(offenders)


@pytest.mark.parametrize(("what", "seeds", "tiers"), RULES, ids=[rule[0] for rule in RULES])
def test_every_test_reaching_heavy_work_carries_its_tier(tests, what, seeds, tiers):
    reaching = [t for t in tests if t.reached & seeds]
    assert reaching, f"no test reaches {what}: the names {sorted(seeds)} moved, update RULES"
    unmarked = [t.node_id for t in reaching if not t.marks & tiers]
    assert not unmarked, (f"these tests reach {what} but carry none of the marks {sorted(tiers)}:\n"
                          + "\n".join(unmarked))


def test_the_mark_reader_sees_module_and_test_marks():
    """Marks as a module's ``pytestmark`` (one or a list) and as decorators, with or without arguments."""
    tree = ast.parse(
        "import pytest\n"
        "pytestmark = [pytest.mark.slow, pytest.mark.docker]\n"
        "@pytest.mark.hostile_batch\n@pytest.mark.parametrize('c', [1])\ndef test_a(c): pass\n"
        "def test_b(): pass\n"
        "def helper(): pass\n"
    )
    assert _marks_by_test(tree) == {"test_a": {"slow", "docker", "hostile_batch", "parametrize"},
                                    "test_b": {"slow", "docker"}}
    assert _marks_by_test(ast.parse("import pytest\npytestmark = pytest.mark.class_batch\ndef test_c(): pass\n")) == {
        "test_c": {"class_batch"}}


def test_reaching_follows_fixtures_getfixturevalue_and_fstrings():
    tree = ast.parse(
        "def docker_run(): require_docker()\n"
        "def bwrap_run(): pass\n"
        "def run(request): return request.getfixturevalue(f'{request.param}_run')\n"
        "def chosen(request): return request.getfixturevalue('docker_run')\n"
    )
    functions = _functions(tree)
    graph = {name: _named(function, set(functions)) for name, function in functions.items()}
    assert {"docker_run", "bwrap_run", "require_docker"} <= _reached("run", graph)
    assert "require_docker" in _reached("chosen", graph)
    assert "require_docker" not in _reached("bwrap_run", graph)
