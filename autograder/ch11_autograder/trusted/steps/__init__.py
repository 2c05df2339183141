"""The nbgrader steps that keep the verdict out of the student's process: one step per module.

Autograde sanitizes each notebook first (``Autograde.sanitize_preprocessors``)::

    SanitizeOnce       nbgrader's sanitize steps, once per notebook: at its turn, or
                       ahead of it when the later notebooks are read early

then grades it (``Autograde.autograde_preprocessors``, see ``nbgrader_config.py``)::

    VerdictCacheLookup reuse the outputs of a byte-identical notebook graded by the
                       same release and suites, when a cache is configured
                       (``verdict_cache.py``); the steps up to the store then do nothing
    ExecutionAhead     at the first notebook, execute it and the later ones on a thread,
                       in a sandbox of their own (``execution_ahead.py``)
    SuitesAhead        start the hidden suites on a thread, to run while the notebook
                       executes, and with a spare core the later notebooks' on the same
                       lane (``ahead.py``); TrustedVerdicts collects their verdicts
    SandboxedExecute   instead of nbgrader's Execute: run the notebook in the
                       sandbox for its outputs only, copy them back as
                       sanitized data
    IgnorePattern, ClearMetadataPreprocessor, LimitOutput   (nbgrader's)
    TrustedVerdicts    replace every autograded test cell's outputs by the
                       verdict of its hidden property suite (and its metadata's
                       ``ch11_verdict`` by the verdict's record, for the class report)
    VerdictCacheStore  write the cached outputs (hit) or store this run's (miss)
    SaveAutoGrades, AssignLatePenalties, CheckCellMetadata  (nbgrader's)

``start_sandboxes`` is ``Autograde.pre_convert_hook``: a submission's zygotes started before
its first notebook.

GenerateFeedback (``GenerateFeedback.preprocessors``)::

    GetGrades, StripHiddenTests, SanitizeFeedback, PresentVerdicts (each verdict's first line
    highlighted, passed checks folded), RenderMath, CSSHTMLHeaderPreprocessor

Each step is configured through its traits (``c.SandboxedExecute.timeout = 60`` ...). The
sandbox backend comes from the ``sandbox`` trait (:mod:`.sandbox_traits`), else
``$CH11_SANDBOX``, else bwrap; a backend that cannot run raises ``SandboxUnavailable`` and
nbgrader reports the submission as failed: grading never silently runs unsandboxed. What
the steps keep from one notebook to the next (launchers, zygotes started early, the later
notebooks read once) is one object per process, :class:`.process.GradingProcess`.
"""

from .execution_ahead import ExecutionAhead
from .present_verdicts import PresentVerdicts
from .render_math import RenderMath
from .sandboxed_execute import SandboxedExecute
from .sanitize_feedback import SanitizeFeedback
from .sanitize_once import SanitizeOnce
from .start_sandboxes import start_sandboxes
from .strip_hidden_tests import StripHiddenTests
from .suites_ahead import SuitesAhead
from .trusted_verdicts import TrustedVerdicts
from .verdict_cache_lookup import VerdictCacheLookup
from .verdict_cache_store import VerdictCacheStore

__all__ = [
    "ExecutionAhead",
    "PresentVerdicts",
    "RenderMath",
    "SandboxedExecute",
    "SanitizeFeedback",
    "SanitizeOnce",
    "StripHiddenTests",
    "SuitesAhead",
    "TrustedVerdicts",
    "VerdictCacheLookup",
    "VerdictCacheStore",
    "start_sandboxes",
]
