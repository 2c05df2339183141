"""The release/suite digest: one sha256 over everything that grades a submission.

Two readers rely on it. A Dask worker (``batch/jobs.py``) refuses a job whose coordinator
graded with other tests; the verdict cache (``trusted/verdict_cache.py``) reuses a verdict
only under the digest it was computed with. Both must agree on what "the same release and
suites" means, so the definition lives here, below both (it imports nothing of the package but the
names of nbgrader's course folders, :mod:`.course_layout`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .course_layout import CONFIG, SOURCE, assignment_source

__all__ = ["GRADING_CODE", "VERDICT_CACHE_ENV", "release_digest"]

#: The verdict cache's directory (absolute; empty or unset: no cache), read by ``trusted/verdict_cache.py``.
VERDICT_CACHE_ENV = "CH11_VERDICT_CACHE"

#: The package's grading code, digested with the release: the hidden suites (``exercises/``), the
#: engine that runs them (``trusted/``) and the facade they reach it through (``api/``), the sandbox
#: and its runtime (``untrusted/``) and the wire protocol.
_PACKAGE = Path(__file__).resolve().parent
GRADING_CODE = ("exercises", "api", "trusted", "untrusted", "protocol", "nbgrader_main.py")


def release_digest(course: Path, assignment: str) -> str:
    """sha256 (hex) of what grades a submission: ``course``'s ``nbgrader_config.py``, every file of
    ``course/source/<assignment>/`` (relative names and bytes, sorted) and the package's grading code
    (the ``.py`` files of the hidden suites, the trusted engine, the sandbox and the protocol).

    Two machines with equal digests grade the same submission with the same tests and the same
    configuration. Raises ``OSError`` when a file cannot be read.
    """
    digest = hashlib.sha256()

    def add(label: str, path: Path) -> None:
        digest.update(label.encode() + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")

    add(CONFIG, course / CONFIG)
    source = assignment_source(course, assignment)
    if not source.is_dir():
        raise FileNotFoundError(f"{source}: no such directory")
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        add(f"{SOURCE}/{path.relative_to(source).as_posix()}", path)
    for part in GRADING_CODE:
        root = _PACKAGE / part
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
        for path in paths:
            add(f"package/{path.relative_to(_PACKAGE).as_posix()}", path)
    return digest.hexdigest()
