"""The repository's locations as the tests use them: the package's own, and the tests' folders.

The tests read the repository through the package's one definition
(``ch11_autograder.paths``), so they check the very files the package under test
uses; ``tests/test_suite_layout.py`` checks that this package is this checkout's.
"""

from __future__ import annotations

from ch11_autograder.paths import (
    ASSIGNMENT,
    BUILD_DIR,
    CHAPTER_LISTINGS,
    COURSE_CONFIG,
    DEMO_CLASS_DIR,
    HARNESS_DIR,
    README,
    RELEASE_DIR,
    REPO_ROOT,
    SOURCE_DIR,
)

__all__ = [
    "ASSIGNMENT",
    "BUILD_DIR",
    "CHAPTER_LISTINGS",
    "COURSE_CONFIG",
    "DEMO_CLASS_DIR",
    "DOCS_DIR",
    "HARNESS_DIR",
    "HARNESS_MANIFEST",
    "PACKAGE_DIR",
    "README",
    "RELEASE_DIR",
    "REPO_ROOT",
    "SOURCE_DIR",
    "TESTS_DIR",
]

#: The tests (this folder's parent).
TESTS_DIR = REPO_ROOT / "tests"
#: The documentation pages some tests keep in step with the code.
DOCS_DIR = REPO_ROOT / "docs"
#: The pinned manifest of the harness wheel.
HARNESS_MANIFEST = HARNESS_DIR / "manifest.json"
#: The ch11_autograder sources in the checkout.
PACKAGE_DIR = REPO_ROOT / "autograder" / "ch11_autograder"
