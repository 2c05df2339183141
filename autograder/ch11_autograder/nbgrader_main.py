"""``nbgrader``'s own command line, started without one costly import.

``python -m ch11_autograder.nbgrader_main ARGS`` is ``nbgrader ARGS``. The one
difference: ``rfc3987_syntax`` is never imported. jsonschema imports it, when
it is installed, to register its ``iri`` and ``iri-reference`` format checks,
and building that package's grammar takes 1-1.5 s of every process that
imports nbformat (measured in ``bench/README.md``). No schema nbformat,
nbgrader or jupyter_events validates with names a format, so nothing checks
differently. The grader starts many nbgrader processes per class; instructors
who type ``nbgrader`` get the same results, a second later.
"""

from __future__ import annotations

import sys

#: Import name kept out of grading processes (see the module docstring).
SKIPPED_IMPORT = "rfc3987_syntax"


def skip_costly_imports() -> None:
    """Make ``import rfc3987_syntax`` fail fast (an ImportError jsonschema already tolerates)."""
    # None in sys.modules is the documented "import fails" entry; typeshed allows modules only.
    sys.modules.setdefault(SKIPPED_IMPORT, None)  # type: ignore[arg-type]


def main() -> int:
    skip_costly_imports()
    from nbgrader.apps.nbgraderapp import main as nbgrader_main

    return nbgrader_main()


if __name__ == "__main__":
    sys.exit(main())
