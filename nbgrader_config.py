"""nbgrader configuration of the chapter 11 course.

Run nbgrader from the repository root (``nbgrader generate_assignment ch11``,
``nbgrader autograde ch11``, ``nbgrader generate_feedback ch11``). What differs
from plain nbgrader, and why (docs/architecture.md has the whole design):

* The notebook is executed inside a sandbox only for its outputs
  (``SandboxedExecute`` replaces ``Execute``); those outputs are untrusted,
  sanitized data.
* Every autograded test cell is scored by a hidden property suite in the
  trusted process (``TrustedVerdicts``), never by code in the student's kernel.
* Feedback never shows hidden test source and never renders untrusted HTML or
  JavaScript (``StripHiddenTests``, ``SanitizeFeedback``).

The sandbox backend is ``$CH11_SANDBOX`` (``bwrap``, the default, or
``container-user`` inside the grading image); ``CH11_SANDBOX=none`` is the explicit, loudly logged opt-out for
trusted runs such as CI grading the reference solutions. A backend that
cannot run here makes grading refuse, never fall back.
"""

import sys
from pathlib import Path

# Fail closed. traitlets logs an exception raised by a config file and goes on with nbgrader's
# defaults: plain Execute running student code unsandboxed, no hidden suites, release/ instead of
# assignments/, formgrader without the sanitizing steps. SystemExit is not an Exception, so it
# passes traitlets, nbgrader and jupyter_server alike: every nbgrader command stops here with this
# one line, and a Jupyter server loading nbgrader's formgrader on this course refuses to start.
try:
    import nbgrader
    from ch11_autograder.course_layout import RELEASE, SOURCE
    from ch11_autograder.exchange.folder.collect import OwnerCheckedCollect
    from ch11_autograder.exercises import RegistryError, course_exercises
    from ch11_autograder.trusted.feedback_pages import FeedbackExporter
    from ch11_autograder.trusted.offline_math import TEMPLATE_BASEDIR
    from ch11_autograder.trusted.steps import (
        ExecutionAhead,
        PresentVerdicts,
        RenderMath,
        SandboxedExecute,
        SanitizeFeedback,
        SanitizeOnce,
        StripHiddenTests,
        SuitesAhead,
        TrustedVerdicts,
        VerdictCacheLookup,
        VerdictCacheStore,
        start_sandboxes,
    )
    from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        GetGrades,
        IgnorePattern,
        LimitOutput,
        SaveAutoGrades,
    )
except Exception as exc:  # a broken install (an import that raises) stops the same way as a missing one
    raise SystemExit(
        f"nbgrader_config.py: this course grades only with the ch11_autograder package, and {sys.executable} "
        f"cannot import it ({type(exc).__name__}: {' '.join(str(exc).split())}); nothing was done. Run nbgrader "
        "(and formgrader's Jupyter server) from the instructor's environment, the one with the package "
        "(docs/course.md, \"Fail closed\")."
    ) from None

# The exercises this course grades: the chapter's, or the set of the package $CH11_EXERCISES names
# (ch11_autograder/exercises/__init__.py). A name that does not import stops every command here too.
try:
    EXERCISES = course_exercises()
except RegistryError as exc:
    raise SystemExit(
        f"nbgrader_config.py: {exc}; nothing was done. Unset $CH11_EXERCISES to grade the chapter's exercises, "
        "or make the package importable by this Python (docs/authoring.md, \"An exercise of another course\")."
    ) from None

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

# --------------------------------------------------------------------------- course layout
# The package reads and writes these folders by the names in ch11_autograder.course_layout.
c.CourseDirectory.source_directory = SOURCE
c.CourseDirectory.release_directory = RELEASE

# Files other than notebooks that an assignment ships to students. List each
# one here; nbgrader's exchange (release/fetch/submit/collect) copies only
# notebooks, these and the exchange's own files. generate_assignment copies
# every file of source/<assignment>/ that `ignore` does not exclude, so keep
# source/ free of anything else.
DECLARED_FILES: list[str] = []
# `nbgrader submit` writes these two beside the notebooks in the exchange, and
# `collect` must bring them into submitted/: timestamp.txt is the submission
# time that autograde's late penalty reads, submission_secret.txt is the key
# that release_feedback files each student's feedback under (without it,
# release_feedback fails and fetch_feedback finds nothing). Submit rewrites
# both after copying, so a student's own copies never reach the exchange.
EXCHANGE_FILES = ["timestamp.txt", "submission_secret.txt"]
c.CourseDirectory.include = ["*.ipynb", *DECLARED_FILES, *EXCHANGE_FILES]
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints",
    "*.pyc",
    "__pycache__",
    "feedback",
    ".hypothesis",
    ".pytest_cache",
    "*.db",
    "*.sqlite",
    ".git",
    ".DS_Store",
    "*~",
]
c.CourseDirectory.max_file_size = 10_000  # kilobytes

# --------------------------------------------------------------------------- exchange
# nbgrader collect takes each student's newest folder in the exchange's inbound, which any
# user can write; a folder named for a classmate would be collected as theirs (nbgrader
# only warns). This collect refuses folders not owned by the student they name, loudly, and
# collects nothing from an exchange another user can take over (ch11_autograder/exchange/).
c.ExchangeFactory.collect = OwnerCheckedCollect

# --------------------------------------------------------------------------- autograde
# nbgrader's sanitize steps stay as they are (SanitizeOnce runs nbgrader's own list, c.SanitizeOnce.steps);
# a deleted test cell comes back. SanitizeOnce runs them once per notebook: a later notebook that
# ExecutionAhead and SuitesAhead read and sanitized ahead of its turn is not sanitized again there.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [SanitizeOnce]

c.Autograde.autograde_preprocessors = [
    VerdictCacheLookup,  # a verdict cache hit makes the steps up to VerdictCacheStore do nothing
    ExecutionAhead,  # at the first notebook, the later ones start executing, in sandboxes of their own
    SuitesAhead,  # the hidden suites start on a thread and run while the notebook executes
    SandboxedExecute,  # instead of nbgrader's Execute
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    TrustedVerdicts,  # after LimitOutput, before SaveAutoGrades
    VerdictCacheStore,  # cached outputs in (hit) or this run's stored (miss)
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Before each submission's first notebook: start the zygotes of the sandboxes ExecutionAhead and
# SuitesAhead will use, while nbgrader sets the submission up (they would start 0.4 s later).
c.Autograde.pre_convert_hook = start_sandboxes

c.SandboxedExecute.timeout = 60  # seconds per cell
c.SandboxedExecute.wall_seconds = 900.0  # seconds for the whole notebook
c.SandboxedExecute.submission_wall_seconds = 600.0  # seconds for all of one submission's notebooks together
c.SandboxedExecute.interrupt_grace = 5.0  # seconds a timed-out cell's kernel has to answer its interrupt
c.TrustedVerdicts.call_timeout = 10.0  # seconds per call of a student function
c.TrustedVerdicts.startup_timeout = 120.0  # seconds to run the submission's cells in the worker
# Figure cells only draw; the sandboxed notebook execution runs them for the
# picture, the verdict worker need not (a slow plot would delay every restart).
# Each exercise names its figure cells in the registry (ch11_autograder/exercises/__init__.py).
c.TrustedVerdicts.worker_skip_cells = [cell for e in EXERCISES for cell in e.worker_skip_cells]

# Verdict cache (ch11_autograder/trusted/verdict_cache.py): a byte-identical notebook graded
# by the same release, suites, settings and sandbox reuses its earlier outputs and verdicts,
# byte for byte. Off unless an absolute directory is set here or in $CH11_VERDICT_CACHE
# (this trait wins); entries beyond max_bytes go least recently used first.
c.VerdictCache.directory = ""
c.VerdictCache.max_bytes = 512 * 1024**2

# ----- exercise suites register here ------------------------------------------------------
# One dotted module (or .py path) per exercise; importing it registers its
# CellSuites with ch11_autograder.trusted.registry.register. A test cell without a
# registered suite scores 0. The exercises' suites come from the registry
# (ch11_autograder/exercises/__init__.py: ch11_autograder.exercises.exN.suite), or from the
# registry $CH11_EXERCISES names; add a module here for suites outside both.
c.TrustedVerdicts.suite_modules = [e.suite_module for e in EXERCISES]
# ------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------- feedback
# nbconvert's HTMLExporter, with one student's last pages rendered by a forked helper while the first
# ones render here (trusted/feedback_pages.py): the same pages, sooner. Off: c.FeedbackExporter.split = "off".
c.GenerateFeedback.exporter_class = FeedbackExporter
c.GenerateFeedback.preprocessors = [
    GetGrades,
    StripHiddenTests,
    SanitizeFeedback,
    PresentVerdicts,  # each test cell's verdict: its first line highlighted, passed checks folded
    RenderMath,  # TeX to MathML here, so the page needs no MathJax from a CDN
    CSSHTMLHeaderPreprocessor,
]
# The page's template: nbgrader's feedback template without Bootstrap's 117 KB of CSS, with one line at
# the top (full marks, or the first thing to fix) and the function each test cell checks named in the
# contents list and headings (trusted/templates/ch11_feedback). FeedbackExporter only: formgrader keeps
# nbgrader's templates.
c.FeedbackExporter.template_name = "ch11_feedback"
# Its `extends 'feedback/index.html.j2'` is found under nbgrader's template directory, searched as a root
# (this replaces the Bootstrap CSS folder nbgrader puts there, which the page no longer includes).
c.FeedbackExporter.extra_template_paths = [
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]
# The feedback page loads nothing from the network: nbgrader's feedback template stays, but its
# MathJax loader (a CDN script) is replaced by an empty macro from our template directory, found
# first; nbgrader's own template directory follows (setting this trait replaces nbgrader's default).
c.HTMLExporter.extra_template_basedirs = [
    str(TEMPLATE_BASEDIR),
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]

# --------------------------------------------------------------------------- formgrader
# formgrader renders submissions with nbconvert's HTMLExporter, whose template shows
# markdown answers unsanitized (HTMLExporter.sanitize_html does not reach nbgrader's
# formgrade template). Sanitizing in a preprocessor changes only the rendering: stored
# notebooks and nbgrader's checksums are untouched. The hidden test regions are cut from
# the rendering too: the autograded notebook keeps them (OverwriteCells restores test
# cells from the gradebook), but they hold no check of their own (the suites grade), so
# the grader's view shows what the student's feedback shows. tests/browser/ checks both
# in Chromium. (GenerateFeedback's exporter runs these as well; both are idempotent.)
c.HTMLExporter.preprocessors = [
    "ch11_autograder.trusted.steps.StripHiddenTests",
    "ch11_autograder.trusted.steps.SanitizeFeedback",
]

# Markdown as nbconvert renders it is cleaned once more, in the feedback page and in formgrader:
# a markdown link builds <a href="javascript:..."> and an image a remote load after the raw HTML
# was cleaned. Both templates pass every markdown cell through `markdown2html | strip_files_prefix`;
# this filter does nbconvert's job, then cleans (trusted/rendered_markdown.py).
c.HTMLExporter.filters = {
    "strip_files_prefix": "ch11_autograder.trusted.rendered_markdown.strip_files_prefix_and_clean",
}
