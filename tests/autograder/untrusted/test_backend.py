"""Backend descriptors (``untrusted/backend.py``, ``backends/registry.py``): callers ask, never compare names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ch11_autograder import paths
from ch11_autograder.trusted.steps import SandboxedExecute, TrustedVerdicts
from ch11_autograder.untrusted.backend import fatal_signal
from ch11_autograder.untrusted.backends.registry import BACKENDS
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
from ch11_autograder.untrusted.choose import BACKENDS as NAMES
from ch11_autograder.untrusted.choose import backend_for, per_process_backends, resolve_backend
from ch11_autograder.untrusted.forkserver import ForkServerLauncher
from ch11_autograder.untrusted.launch import SandboxUnavailable

PACKAGE = Path(paths.__file__).resolve().parent


def test_the_registry_is_the_list_of_names():
    assert NAMES == tuple(BACKENDS) == ("bwrap", "container-user", "docker", "none")
    assert all(resolve_backend(name) == name and backend_for(name) is BACKENDS[name] for name in NAMES)


@pytest.mark.parametrize(("name", "status", "signal"), [
    ("bwrap", 128 + 9, 9), ("bwrap", 128 + 64, 64), ("bwrap", 128, None), ("bwrap", 128 + 65, None),
    ("bwrap", 1, None), ("bwrap", -15, 15), ("bwrap", None, None),
    ("container-user", 128 + 9, None), ("container-user", -9, 9), ("none", 137, None), ("none", -11, 11),
])
def test_each_backend_decodes_its_exit_status(name, status, signal):
    assert BACKENDS[name].fatal_signal(status) == signal


def test_a_launcher_decodes_as_its_backend_and_a_fork_server_as_the_launcher_it_wraps():
    bwrap_like = UnsandboxedLauncher()
    object.__setattr__(bwrap_like, "backend", BACKENDS["bwrap"])  # this instance only
    assert fatal_signal(UnsandboxedLauncher(), 137) is None
    assert fatal_signal(bwrap_like, 137) == 9
    assert fatal_signal(ForkServerLauncher(bwrap_like), 137) == 9
    assert fatal_signal(object(), 137) is None and fatal_signal(object(), -9) == 9  # no backend: a plain process


def test_docker_is_named_but_refused_for_one_grading_process():
    assert per_process_backends() == ("bwrap", "container-user", "none")
    with pytest.raises(SandboxUnavailable, match="--docker IMAGE"):
        BACKENDS["docker"].launcher(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("step", [SandboxedExecute, TrustedVerdicts])
def test_the_sandbox_trait_names_the_backends_a_grading_process_takes(step):
    help_text = step.class_traits()["sandbox"].help
    assert all(name in help_text for name in per_process_backends()) and "docker" not in help_text


def _name_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """``x == "bwrap"``, ``sandbox != "none"``, ``name in ("bwrap", ...)`` where ``x`` names a sandbox or backend."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = [ast.unparse(side) for side in sides if isinstance(side, (ast.Name, ast.Attribute, ast.Call))]
        literals = {c.value for side in sides for c in ast.walk(side)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if any(word in n.lower() for n in names for word in ("sandbox", "backend", "key")) and literals & set(BACKENDS):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_outside_the_backends_compares_a_backend_name():
    compared = [f"{path.relative_to(PACKAGE)}:{line}: {text}"
                for path in sorted(PACKAGE.rglob("*.py")) if "backends" not in path.parts
                for line, text in _name_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert not compared, "\n".join(compared)
