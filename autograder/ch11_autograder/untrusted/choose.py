"""Choosing the sandbox backend: the one place that reads ``$CH11_SANDBOX``, ``$CH11_SLOT`` and ``$CH11_FONT_LIST``.

* :func:`resolve_backend` turns a backend name, or ``$CH11_SANDBOX`` when none is
  given, into the canonical name, refusing unknown ones; :func:`backend_for` gives its
  descriptor (:mod:`.backends.registry`), which callers ask instead of comparing names.
* :func:`slot_from_env` reads this process's grading slot from ``$CH11_SLOT``.
* :func:`choose_launcher` turns a backend name into a ready
  :class:`~.launch.Launcher`. It never falls back to running unsandboxed: a
  backend that cannot run here raises :class:`~.launch.SandboxUnavailable`
  saying what is missing. A bwrap launcher starts from the font list file
  ``$CH11_FONT_LIST`` names, when set (:mod:`.font_list`). It also hides the package of another
  course's exercises (``$CH11_EXERCISES``, :func:`.launch.course_packages`) like the chapter's
  reference library.

Running a script under the chosen launcher is :mod:`.capped_run`'s part.
"""

from __future__ import annotations

import os
import sys

from .backend import Backend, LaunchSettings
from .backends.registry import BACKENDS as _REGISTRY
from .font_list import FONT_LIST_ENV
from .forkserver import ForkServerLauncher
from .launch import DEFAULT_SANDBOX, SANDBOX_ENV, SLOT_ENV, Launcher, SandboxUnavailable, course_packages

__all__ = [
    "BACKENDS",
    "backend_for",
    "choose_launcher",
    "forking_launcher",
    "per_process_backends",
    "resolve_backend",
    "slot_from_env",
]

#: Every backend's name (:mod:`.backends.registry`).
BACKENDS = tuple(_REGISTRY)

_UNSANDBOXED_BANNER = (
    "WARNING: {var}=none: untrusted code will run WITHOUT A SANDBOX, as this user, able to read and "
    "write everything the grader can (reference solutions, suites, the gradebook). Use this only for "
    "trusted runs such as CI grading the reference solutions."
)


def resolve_backend(name: str | None = None) -> str:
    """The backend to use, as one of :data:`BACKENDS`.

    ``name`` when it is given and not blank, else ``$CH11_SANDBOX`` when set and not
    blank, else ``bwrap``; stripped and lower-cased (so ``" BWrap "`` is ``"bwrap"``).
    Every caller that takes a backend name (the nbgrader preprocessors' ``sandbox``
    trait, ``grade_class(sandbox=...)``, ``--sandbox`` options) resolves it here, so
    all of them read the environment the same way.

    Raises:
        ValueError: not a known backend; there is no fallback.
    """
    if name is None or not name.strip():
        name = os.environ.get(SANDBOX_ENV, "").strip() or DEFAULT_SANDBOX
    key = name.strip().lower()
    if key not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {key!r}: choose one of {', '.join(BACKENDS)} (${SANDBOX_ENV})")
    return key


def backend_for(name: str | None = None) -> Backend:
    """The descriptor of backend ``name``, resolved by :func:`resolve_backend` (``None``: ``$CH11_SANDBOX``)."""
    return _REGISTRY[resolve_backend(name)]


def per_process_backends() -> tuple[str, ...]:
    """The backends a grading process can launch runs with (every one but docker), for options and help."""
    return tuple(name for name, backend in _REGISTRY.items() if backend.per_process)


def slot_from_env() -> int:
    """This process's grading slot: ``int($CH11_SLOT)``, 0 when unset or blank.

    The range (0..7) is the container-user launcher's to check.

    Raises:
        SandboxUnavailable: the variable is not a number.
    """
    slot_text = os.environ.get(SLOT_ENV, "").strip() or "0"
    try:
        return int(slot_text)
    except ValueError:
        raise SandboxUnavailable(f"${SLOT_ENV} must be a slot number 0..7, got {slot_text!r}") from None


def choose_launcher(name: str | None = None) -> Launcher:
    """The launcher for backend ``name``, resolved by :func:`resolve_backend` (``None``: ``$CH11_SANDBOX``).

    * ``"bwrap"``: a :class:`~.backends.bwrap.BwrapLauncher` whose sandbox has been
      built once successfully (the probe result is cached on the launcher).
    * ``"container-user"``: a :class:`~.backends.container_user.ContainerUserLauncher`
      for slot :func:`slot_from_env`, after its :meth:`check` (root inside
      the grading image, ``setpriv`` present). The batch grader gives each
      parallel worker its own slot.
    * ``"docker"``: not a per-process backend; raises :class:`SandboxUnavailable`
      pointing at the in-image way: run the whole batch inside the grading
      image (``ch11-grade batch ... --docker IMAGE``), where student code runs
      under ``container-user``.
    * ``"none"``: :class:`~.backends.unsandboxed.UnsandboxedLauncher`, after a warning on
      stderr (and the launcher warns again on every spawn).

    Raises:
        SandboxUnavailable: the chosen backend cannot run here; the message says
            what is missing and how to get it. There is no fallback.
        ValueError: unknown backend name.
    """
    backend = backend_for(name)
    if not backend.sandboxed:
        print(_UNSANDBOXED_BANNER.format(var=SANDBOX_ENV), file=sys.stderr)
    # $CH11_SLOT is read only for a backend with slots: elsewhere it means nothing, and a bad value must not refuse.
    slot = slot_from_env() if backend.max_slots is not None else 0
    return backend.launcher(LaunchSettings(slot=slot, font_list_file=os.environ.get(FONT_LIST_ENV) or None,
                                           hidden_modules=course_packages()))


def forking_launcher(launcher: Launcher, name: str, *, runs: str = "all") -> ForkServerLauncher:
    """``launcher`` (backend ``name``) wrapped so that a submission's runs fork from one zygote.

    ``runs="workers"``: a launcher for verdict workers only, whose zygote imports less.
    """
    return ForkServerLauncher(launcher, wipe=backend_for(name).private_dirs, runs=runs)
