"""The sandbox backends by name: each module's :class:`~..backend.Backend`, in one table.

Adding a backend: its own module declaring ``BACKEND``, and one entry here.
"""

from __future__ import annotations

from ..backend import Backend
from . import bwrap, container_user, docker, unsandboxed

__all__ = ["BACKENDS"]

#: Canonical name -> descriptor, in the order error messages list them.
BACKENDS: dict[str, Backend] = {
    backend.name: backend for backend in (bwrap.BACKEND, container_user.BACKEND, docker.BACKEND, unsandboxed.BACKEND)
}
