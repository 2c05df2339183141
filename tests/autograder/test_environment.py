"""The list of ``CH11_*`` environment variables (``ch11_autograder.environment``) against the code.

Read from the sources, no import of what they describe: every ``CH11_`` name the package spells
(code, docstrings, its shell scripts) is listed, every listed name is read by the package, and
the modules that read each one are the list's ``read_by``. A read is ``os.environ.get/pop(X)``,
``os.environ[X]``, ``X in os.environ`` or ``os.getenv(X)``, with ``X`` the name or a module-level
constant holding it (``SANDBOX_ENV = "CH11_SANDBOX"``, and aliases of such a constant).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ch11_autograder.environment import DEVELOPMENT, VARIABLES
from support.paths import DOCS_DIR, PACKAGE_DIR, REPO_ROOT

NAME = re.compile(r"CH11_[A-Z0-9_]*[A-Z0-9]")
#: The list itself, which names them all.
_LIST = PACKAGE_DIR / "environment.py"


def _package_files() -> list[Path]:
    return sorted(p for p in PACKAGE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc", ".ipynb", ".png", ".svg", ".woff2") and p != _LIST)


def _constants(trees: dict[Path, ast.Module]) -> dict[str, str]:
    """Module-level ``NAME = "CH11_..."`` constants, and ``ALIAS = NAME`` of them, across the package."""
    found: dict[str, str] = {}
    for _ in range(2):  # a second pass resolves aliases of aliases in any file order
        for tree in trees.values():
            for node in tree.body:
                if not isinstance(node, ast.Assign):
                    continue
                value = node.value
                text = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else (
                    found.get(value.id) if isinstance(value, ast.Name) else None)
                if text is not None and NAME.fullmatch(text):
                    found.update({t.id: text for t in node.targets if isinstance(t, ast.Name)})
    return found


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def reads(tree: ast.Module, constants: dict[str, str]) -> set[str]:
    """The ``CH11_*`` variables the module ``tree`` reads from its environment (see the module)."""
    def name(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
            return node.value
        key = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return constants.get(key) if key is not None else None

    found = set()
    for node in ast.walk(tree):
        read: ast.expr | None = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            if (node.func.attr in ("get", "pop") and _is_environ(node.func.value)) or node.func.attr == "getenv":
                read = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
            read = node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn) and _is_environ(
                node.comparators[0]):
            read = node.left
        if read is not None and (variable := name(read)) is not None:
            found.add(variable)
    return found


def _package_reads() -> dict[str, set[str]]:
    """Variable -> the package files (relative) that read it."""
    trees = {p: ast.parse(p.read_text()) for p in _package_files() if p.suffix == ".py"}
    constants = _constants(trees)
    readers: dict[str, set[str]] = {}
    for path, tree in trees.items():
        for variable in reads(tree, constants):
            readers.setdefault(variable, set()).add(path.relative_to(PACKAGE_DIR).as_posix())
    return readers


def test_the_list_is_sorted_and_names_each_variable_once():
    for listed in (VARIABLES, DEVELOPMENT):
        names = [v.name for v in listed]
        assert names == sorted(set(names))
    assert not {v.name for v in VARIABLES} & {v.name for v in DEVELOPMENT}
    assert all(v.meaning and v.default and v.read_by for v in (*VARIABLES, *DEVELOPMENT))


def test_every_ch11_name_the_package_spells_is_listed_and_every_listed_one_is_spelled():
    spelled: dict[str, set[str]] = {}
    for path in _package_files():
        for found in NAME.findall(path.read_text(errors="replace")):
            spelled.setdefault(found, set()).add(path.relative_to(PACKAGE_DIR).as_posix())
    listed = {v.name for v in VARIABLES}
    assert not set(spelled) - listed, {n: sorted(spelled[n]) for n in set(spelled) - listed}
    assert not listed - set(spelled)


def test_each_variable_is_read_by_exactly_the_modules_the_list_names():
    readers = _package_reads()
    assert {v.name: set(v.read_by) for v in VARIABLES} == readers


def test_the_variables_of_the_benchmarks_and_tests_are_read_where_the_list_says():
    for variable in DEVELOPMENT:
        for reader in variable.read_by:
            assert variable.name in (REPO_ROOT / reader).read_text(), (variable.name, reader)


def test_the_architecture_doc_points_to_the_list():
    assert "autograder/ch11_autograder/environment.py" in (DOCS_DIR / "architecture.md").read_text()


def test_a_read_is_found_through_a_constant_an_alias_and_each_way_of_reading():
    constants = {"SANDBOX_ENV": "CH11_SANDBOX", "ALIAS": "CH11_SANDBOX"}
    for line, expected in [
        ('os.environ.get("CH11_A")', {"CH11_A"}),
        ("os.environ.pop(SANDBOX_ENV, '')", {"CH11_SANDBOX"}),
        ("os.environ[launch.ALIAS]", {"CH11_SANDBOX"}),
        ('"CH11_B" in os.environ', {"CH11_B"}),
        ('os.getenv("CH11_C")', {"CH11_C"}),
        ('os.environ["CH11_D"] = "1"', set()),  # set, not read
        ('env.get("CH11_E")', set()),  # a dict of the caller's, not the environment
        ('print("CH11_F")', set()),
    ]:
        assert reads(ast.parse(f"import os\n{line}\n"), constants) == expected, line
