"""The traits every step that starts sandboxed runs shares: :class:`SandboxTraits`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traitlets import Bool, HasTraits, Unicode

from ...untrusted.choose import per_process_backends, resolve_backend
from ...untrusted.launch import Launcher
from .process import grading_process

__all__ = ["SandboxTraits"]


class SandboxTraits(HasTraits):
    """``sandbox`` and ``fork_from_zygote``, declared once for ``SandboxedExecute`` and ``TrustedVerdicts``.

    A mixin, not a configurable class of its own: each step keeps its own config section
    (``c.SandboxedExecute.sandbox``, ``c.TrustedVerdicts.sandbox``), as before.
    """

    fork_from_zygote = Bool(
        True,
        help="Start this submission's runs as forks of one pre-imported process in its sandbox "
        "(untrusted/forkserver.py); off: a new interpreter per run.",
    ).tag(config=True)
    # Only the backends a grading process can launch with: docker is refused here (untrusted/choose.py), it is a
    # batch graded inside the image, where these steps run under container-user.
    sandbox = Unicode(
        "", help=f"Sandbox backend: {', '.join(per_process_backends())}. Empty: $CH11_SANDBOX, else bwrap."
    ).tag(config=True)

    def backend(self) -> str:
        """The ``sandbox`` trait resolved (``untrusted.choose.resolve_backend``)."""
        return resolve_backend(self.sandbox)

    def launcher(self, resources: Mapping[str, Any], *, own_sandbox: bool = False) -> Launcher:
        """This process's launcher for the submission ``resources`` name (:meth:`.GradingProcess.launcher`)."""
        return grading_process().launcher(self.sandbox, resources, fork=self.fork_from_zygote,
                                          own_sandbox=own_sandbox)
