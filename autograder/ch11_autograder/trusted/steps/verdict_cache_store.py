"""``VerdictCacheStore``: the last step before SaveAutoGrades, cached outputs in (hit) or this run's stored (miss)."""

from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from ..submission_cells import autograded_test_cells
from ..verdict_cache import VerdictCache, apply_entry, cache_state, prune, snapshot, write_entry
from ..verdicts import VERDICT_METADATA_KEY

__all__ = ["VerdictCacheStore"]


class VerdictCacheStore(NbGraderPreprocessor):
    """Last step before SaveAutoGrades: write cached outputs (hit) or store this run's (miss).

    On a hit the notebook gets exactly the outputs, execution counts and verdict records the
    earlier run left at this point. On a miss the notebook's state is stored, unless the run
    was marked unrepeatable (an execution problem, a worker incident, a load-dependent
    failure) or the entry would exceed ``VerdictCache.max_entry_bytes``; then the cache is
    pruned to ``VerdictCache.max_bytes``. A cache that cannot be written is logged, never
    fatal: the grade does not depend on it.
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        state = cache_state(resources)
        if state is None:
            return nb, resources
        if state.cells is not None:
            apply_entry(nb, state.cells)
            for _, cell in autograded_test_cells(nb):
                record = cell.metadata.get(VERDICT_METADATA_KEY, {})
                self.log.info("%s/%s: verdict reused from the cache", resources.get("unique_key", "notebook"),
                              record.get("grade_id", "?"))
            return nb, resources
        if state.unrepeatable:
            self.log.info("verdict cache: not storing %s (%s)", state.key[:16], state.unrepeatable)
            return nb, resources
        cache = VerdictCache(config=self.config, parent=self)
        try:
            if write_entry(state.directory, snapshot(nb, state.identity, state.key), max_bytes=cache.max_entry_bytes):
                self.log.info("verdict cache: stored entry %s", state.key[:16])
                prune(state.directory, cache.max_bytes)
            else:
                self.log.info("verdict cache: entry %s exceeds %d bytes; not stored", state.key[:16],
                              cache.max_entry_bytes)
        except OSError as exc:
            self.log.warning("verdict cache: could not store entry %s: %s", state.key[:16], exc)
        return nb, resources
