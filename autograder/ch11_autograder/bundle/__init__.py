"""The student bundle (``ch11-grade student-bundle``): what students install and open, in one folder or zip.

    from ch11_autograder.bundle import build_bundle
    build_bundle(Path("ch11-student.zip"))

:mod:`.student_bundle` builds it: the released notebooks, the harness wheel checked against
``harness/manifest.json``, pinned requirements and a README for students.
"""

from .student_bundle import LAYOUT, TOP, BundleError, BundleResult, build_bundle, pinned_closure

__all__ = ["LAYOUT", "TOP", "BundleError", "BundleResult", "build_bundle", "pinned_closure"]
