"""``docker``: a whole batch graded inside the grading image, not a backend of one grading process.

Named so that ``$CH11_SANDBOX=docker`` and ``--sandbox docker`` are understood, and refused
with the way to get it: ``ch11-grade batch ... --docker IMAGE`` runs the batch in the image,
where student code runs under ``container-user``.
"""

from __future__ import annotations

from ..backend import Backend
from ..launch import SANDBOX_ENV

__all__ = ["BACKEND"]

BACKEND = Backend(
    "docker",
    None,
    refusal=(
        "docker is not a per-notebook backend: grade inside the grading image instead, with "
        "`ch11-grade batch SOURCE --course DIR --docker IMAGE` (student code then runs under "
        f"{SANDBOX_ENV}=container-user in the container). Outside a container use the default bubblewrap "
        f"backend ({SANDBOX_ENV}=bwrap), or {SANDBOX_ENV}=none for trusted runs only."
    ),
    keeps_runs_apart=False,
)
