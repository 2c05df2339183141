"""Choosing the sandbox backend.

:func:`choose_launcher` turns a backend name (or ``$CH11_SANDBOX``) into a
ready :class:`~.launch.Launcher`. It never falls back to running
unsandboxed: a backend that cannot run here raises
:class:`~.launch.SandboxUnavailable` saying what is missing. Running a script
under the chosen launcher is :mod:`.capped_run`'s part.
"""

from __future__ import annotations

import os
import sys

from .backends.unsandboxed import UnsandboxedLauncher
from .launch import DEFAULT_SANDBOX, SANDBOX_ENV, Launcher, SandboxUnavailable

__all__ = ["BACKENDS", "choose_launcher"]

BACKENDS = ("bwrap", "container-user", "docker", "none")

#: Grading slot of this process (0..7) for the container-user backend; the batch grader sets it.
SLOT_ENV = "CH11_SLOT"

_UNSANDBOXED_BANNER = (
    "WARNING: {var}=none: untrusted code will run WITHOUT A SANDBOX, as this user, able to read and "
    "write everything the grader can (reference solutions, suites, the gradebook). Use this only for "
    "trusted runs such as CI grading the reference solutions."
)


def choose_launcher(name: str | None = None) -> Launcher:
    """The launcher for backend ``name``; ``None`` reads ``$CH11_SANDBOX`` (default ``bwrap``).

    * ``"bwrap"``: a :class:`~.backends.bwrap.BwrapLauncher` whose sandbox has been
      built once successfully (the probe result is cached on the launcher).
    * ``"container-user"``: a :class:`~.backends.container_user.ContainerUserLauncher`
      for slot ``int($CH11_SLOT or 0)``, after its :meth:`check` (root inside
      the grading image, ``setpriv`` present). The batch grader gives each
      parallel worker its own slot.
    * ``"docker"``: not a per-process backend; raises :class:`SandboxUnavailable`
      pointing at the in-image way: run the whole batch inside the grading
      image (``ch11-grade batch ... --docker IMAGE``), where student code runs
      under ``container-user``.
    * ``"none"``: :class:`~.backends.unsandboxed.UnsandboxedLauncher`, after a warning on
      stderr (and the launcher warns again on every spawn).

    Names are case-insensitive and stripped.

    Raises:
        SandboxUnavailable: the chosen backend cannot run here; the message says
            what is missing and how to get it. There is no fallback.
        ValueError: unknown backend name.
    """
    if name is None:
        name = os.environ.get(SANDBOX_ENV, "").strip() or DEFAULT_SANDBOX
    key = name.strip().lower()
    if key == "none":
        print(_UNSANDBOXED_BANNER.format(var=SANDBOX_ENV), file=sys.stderr)
        return UnsandboxedLauncher()
    if key == "docker":
        raise SandboxUnavailable(
            "docker is not a per-notebook backend: grade inside the grading image instead, with "
            "`ch11-grade batch SOURCE --course DIR --docker IMAGE` (student code then runs under "
            f"{SANDBOX_ENV}=container-user in the container). Outside a container use the default bubblewrap "
            f"backend ({SANDBOX_ENV}=bwrap), or {SANDBOX_ENV}=none for trusted runs only."
        )
    if key == "container-user":
        from .backends.container_user import ContainerUserLauncher

        slot_text = os.environ.get(SLOT_ENV, "").strip() or "0"
        try:
            slot = int(slot_text)
        except ValueError:
            raise SandboxUnavailable(f"${SLOT_ENV} must be a slot number 0..7, got {slot_text!r}") from None
        user_launcher = ContainerUserLauncher(slot=slot)
        user_launcher.check()
        return user_launcher
    if key == "bwrap":
        from .backends.bwrap import BwrapLauncher

        launcher = BwrapLauncher()
        launcher.check()
        return launcher
    raise ValueError(f"unknown sandbox backend {name!r}: choose one of {', '.join(BACKENDS)} (${SANDBOX_ENV})")
