"""``VerdictCacheLookup``: the first autograde step, a notebook's verdict found in the cache (``verdict_cache.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import IgnorePattern, LimitOutput, NbGraderPreprocessor

from ...grading_digest import release_digest
from ..verdict_cache import (
    LOG_HIT,
    LOG_MISS,
    CacheEntryError,
    CacheState,
    VerdictCache,
    cell_identity,
    entry_key,
    notebook_digest,
    plain,
    read_entry,
    runtime_digest,
    set_cache_state,
    suites_digest,
    support_digest,
)
from .sandboxed_execute import SandboxedExecute
from .sanitize_once import SanitizeOnce
from .support_files import collect_support_files
from .trusted_verdicts import TrustedVerdicts

__all__ = ["SUBMISSION_BOOKKEEPING", "VerdictCacheLookup"]


#: The steps whose configuration shapes what autograde leaves in a notebook (VerdictCacheLookup's key).
_SHAPING_STEPS: tuple[type, ...] = (SanitizeOnce, SandboxedExecute, IgnorePattern, ClearMetadataPreprocessor,
                                    LimitOutput, TrustedVerdicts)


def _settings(config: Any) -> str:
    """The effective configurable traits of the shaping steps and the autograde step list, as JSON."""
    steps = {}
    for step in _SHAPING_STEPS:
        instance = step(config=config)
        names = sorted(instance.trait_names(config=True))
        steps[step.__name__] = {name: plain(getattr(instance, name)) for name in names}
    autograde = config.get("Autograde", {})
    steps["Autograde"] = {name: plain(autograde[name]) for name in sorted(autograde)
                          if name in ("autograde_preprocessors", "sanitize_preprocessors")}
    return json.dumps(steps, sort_keys=True)


#: Files nbgrader's submit and collect put beside every submission's notebooks, different for each submission
#: of the same notebooks: not part of the cache key, or no resubmission (and no official run after a practice
#: one) would ever find the verdict of an unchanged notebook.
SUBMISSION_BOOKKEEPING = frozenset({"timestamp.txt", "submission_secret.txt"})


class VerdictCacheLookup(NbGraderPreprocessor):
    """First autograde step: find this notebook's verdict in the cache (``verdict_cache.py``).

    Does nothing unless a cache directory is configured (``c.VerdictCache.directory`` or
    ``$CH11_VERDICT_CACHE``). It computes the key from the notebook as it arrives here (after
    nbgrader's sanitize steps, before any execution), the course's release digest (the working
    directory is the course root while nbgrader converts), the suites, the effective settings,
    the sandbox backend, the runtime and who submitted; on a valid entry the steps up to
    :class:`VerdictCacheStore` do nothing and the store writes the cached outputs. A key that
    cannot be computed (no ``source/<assignment>/``) or an unusable entry means a fresh grade,
    with the reason in the log.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        cache = VerdictCache(config=self.config, parent=self)
        directory = cache.location()
        if directory is None:
            return nb, resources
        who = resources.get("nbgrader", {})
        assignment, student = str(who.get("assignment", "")), str(who.get("student", ""))
        notebook = str(who.get("notebook") or resources.get("unique_key") or "")
        verdicts = TrustedVerdicts(config=self.config)
        execute = SandboxedExecute(config=self.config)
        try:
            parts = {
                "notebook": notebook_digest(nb),
                "support": support_digest({name: data for name, data in collect_support_files(
                    resources.get("metadata", {}).get("path") or ".",
                    max_total_bytes=execute.max_support_bytes, logger=self.log).items()
                    if name not in SUBMISSION_BOOKKEEPING}),
                "release": release_digest(Path.cwd(), assignment),
                "suites": suites_digest(verdicts.suite_modules),
                "settings": _settings(self.config),
                "sandbox": verdicts.backend(),
                "runtime": runtime_digest(),
                "who": json.dumps([assignment, student, notebook]),
            }
        except (OSError, ValueError) as exc:
            self.log.warning("verdict cache: no key for %s (%s); grading afresh", notebook, exc)
            return nb, resources
        state = CacheState(directory, entry_key(parts), cell_identity(nb))
        set_cache_state(resources, state)
        try:
            state.cells = read_entry(directory, state.key, nb, state.identity, max_bytes=cache.max_entry_bytes)
        except CacheEntryError as exc:
            self.log.warning("verdict cache: entry %s for %s is unusable (%s); grading afresh",
                             state.key[:16], notebook, exc)
        if state.cells is not None:
            self.log.info("%s %s (entry %s): outputs and verdicts reused", LOG_HIT, notebook, state.key[:16])
        else:
            self.log.info("%s %s (entry %s)", LOG_MISS, notebook, state.key[:16])
        return nb, resources
