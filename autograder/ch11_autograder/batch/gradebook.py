"""nbgrader gradebooks opened by the long-lived batch process, without a per-gradebook memory cost.

nbgrader's ``Gradebook`` makes a SQLAlchemy engine per instance and disposes of it on
close, but SQLAlchemy's ORM keeps the INSERT and UPDATE statements it compiles in one
LRU cache per mapped class (``Mapper._compiled_cache``, process-wide), keyed by the
engine's dialect. Each closed gradebook's entries thereby kept its dialect, and with
it type caches and compiled SQL, alive: the orchestrator, which opens several
gradebooks per submission (the isolated course's, the instructor's), grew by about
0.13 MiB per submission (bench part d), up to the caches' size limit.

:func:`open_gradebook` is ``Gradebook`` plus, when it closes, dropping those entries:
they belong to an engine that no longer exists and could never be hit again, so
nothing is lost. Use it for every gradebook the batch opens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from nbgrader.api import Base, Gradebook

__all__ = ["forget_compiled_statements", "open_gradebook"]


@contextlib.contextmanager
def open_gradebook(db: Path | str) -> Iterator[Gradebook]:
    """``Gradebook`` of the SQLite file ``db`` (a path, or an ``sqlite:///`` URL), closed and forgotten on exit."""
    url = db if isinstance(db, str) and db.startswith("sqlite:") else f"sqlite:///{db}"
    try:
        with Gradebook(url) as gb:
            yield gb
    finally:
        forget_compiled_statements()


def forget_compiled_statements() -> None:
    """Empty the ORM's per-mapper caches of compiled statements (each entry pins its engine's dialect).

    The cache is a memoized attribute of each mapper; one that was never made is left alone.
    """
    for mapper in Base.registry.mappers:
        cache = mapper.__dict__.get("_compiled_cache")
        if cache is not None:
            cache.clear()
