"""The package's lazy names (``batch/__init__.py``): the three lists that name them agree, and each resolves."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import ch11_autograder.batch as batch


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the ``if TYPE_CHECKING:`` imports (what mypy sees)."""
    tree = ast.parse(Path(batch.__file__).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 1, ast.dump(stmt)
                for alias in stmt.names:
                    found[alias.asname or alias.name] = str(stmt.module)
    return found


def test_the_type_checking_imports_the_lazy_table_and_all_name_the_same_homes():
    assert _type_checking_imports() == batch._HOMES
    assert sorted(batch.__all__) == sorted(batch._HOMES)


def test_every_lazy_name_is_the_object_of_its_home_module():
    for name, home in batch._HOMES.items():
        assert getattr(batch, name) is getattr(importlib.import_module(f"ch11_autograder.batch.{home}"), name)
