"""The report's mistake groups on a planted class, and the loop from a group to named feedback.

The class: students who each submit Exercise 5's notebook, graded by the batch grader under
bubblewrap (real verdict records): two write the same uncatalogued mistake (a list ``z0`` made an
array instead of refused) with cosmetic differences, two submit the catalogue entry
``block_size_coerced``, one the entry ``mismatch_scanned_forward``, one makes both the ``z0``
mistake and ``mismatch_scanned_forward``, one raises a message full of markup for a bool
``block_size``, and one answers right. Then ``ch11-grade catalogue draft`` turns the ``z0`` group into
a catalogue entry, named in a temporary copy of Exercise 5's catalogue, and the next student who
makes that mistake is graded with it: their feedback names it.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from ch11_autograder.authoring.submissions import answer_sources, fill, read
from ch11_autograder.cli import main as cli_main
from ch11_autograder.exercises.catalogue import catalogue
from ch11_autograder.exercises.ex5 import wrong_answers
from support import batch_support
from support.paths import ASSIGNMENT, RELEASE_DIR, SOURCE_DIR
from support.report_tables import md_tables, table

pytestmark = [pytest.mark.slow, pytest.mark.class_batch]

STEM = "ex5_replay"
CELL = "ex5_checkpointed_cotangents"
TESTS = "ex5_checkpointed_cotangents_tests"
HOSTILE = "<script>alert(1)</script> **bold** | [link](x) `code`"
ENTRIES = {entry.name: entry for entry in catalogue("ex5")}

#: A whole checkpointed_cotangents that makes a list z0 an array instead of refusing it; ``{z0}``
#: is the conversion, ``{k}`` and ``{zs}`` the local names (the cosmetic differences).
Z0_CONVERTED = '''
def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    if not isinstance(chain, StochasticChain) or not isinstance(rng, np.random.Generator):
        raise TypeError("chain must be a StochasticChain and rng a numpy Generator")
    if isinstance(z0, list):
        z0 = {z0}
    if not isinstance(z0, np.ndarray) or z0.dtype != np.float64 or z0.shape != (chain.width,):
        raise ValueError(f"z0 must be a float64 array of shape ({{chain.width}},)")
    {k} = uniform_checkpoint_cost(chain.depth, block_size).block_size
    depth = chain.depth
    starts = range(0, depth, {k})
    inputs, states, z = {{}}, {{}}, z0
    for s in starts:
        inputs[s], states[s] = z, copy.deepcopy(rng.bit_generator.state)
        for i in range(s, min(s + {k}, depth)):
            z = chain.forward(i, z, rng)
    inputs[depth] = z
    cotangents = np.ones((depth + 1, chain.width))
    for s in reversed(starts):
        end = min(s + {k}, depth)
        replay = rng
        if matched:
            replay = copy.deepcopy(rng)
            replay.bit_generator.state = states[s]
        {zs} = {{s: inputs[s], end: inputs[end]}}
        for i in range(s, end - 1):
            {zs}[i + 1] = chain.forward(i, {zs}[i], replay)
        for i in range(end - 1, s - 1, -1):
            cotangents[i] = chain.backward(i, {zs}[i + 1], cotangents[i + 1])
    cost = uniform_checkpoint_cost(depth, {k})
    return ReplayRun(cotangents, depth + cost.recomputed_forward_evaluations, cost.recomputed_forward_evaluations,
                     cost.peak_state_units)
'''


def z0_answer(conversion: str, k: str, zs: str) -> str:
    return Z0_CONVERTED.format(z0=conversion, k=k, zs=zs)


HOSTILE_ANSWER = f'''
_checkpointed_as_given = checkpointed_cotangents


def checkpointed_cotangents(chain, z0, block_size, rng, *, matched=True):
    if isinstance(block_size, bool):
        raise ValueError({HOSTILE!r})
    return _checkpointed_as_given(chain, z0, block_size, rng, matched=matched)
'''

#: student -> (catalogue entries, extra source per answer cell).
PLANTED: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "m_z0_a": ((), {CELL: z0_answer("np.array(z0, dtype=np.float64)", "k", "zs")}),
    # A comment, other names, another but equal numpy call.
    "m_z0_b": ((), {CELL: "# converted, to be kind\n" + z0_answer("np.asarray(z0, dtype=float)", "size", "rebuilt")}),
    "m_coerced_a": (("block_size_coerced",), {}),
    "m_coerced_b": (("block_size_coerced",), {}),
    "m_scan": (("mismatch_scanned_forward",), {}),
    "m_mix": (("mismatch_scanned_forward",), {CELL: z0_answer("np.array(z0, dtype=np.float64)", "k", "zs")}),
    "m_hostile": ((), {CELL: HOSTILE_ANSWER}),
    "m_right": ((), {}),
}


def submission(entries: tuple[str, ...], extra: dict[str, str]) -> nbformat.NotebookNode:
    answers = answer_sources(read(SOURCE_DIR / f"{STEM}.ipynb"))
    answers = {cell: source + ("\n\n\n" + extra[cell] if cell in extra else "") for cell, source in answers.items()}
    return fill(read(RELEASE_DIR / f"{STEM}.ipynb"), answers, wrong=[ENTRIES[name] for name in entries])


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from ch11_autograder.batch import BatchOptions, grade_class

    base = tmp_path_factory.getbasetemp()
    root = base / "mistakes-class"
    for student, (entries, extra) in PLANTED.items():
        folder = root / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(submission(entries, extra), folder / f"{STEM}.ipynb")
    graded = batch_support.assigned_course(base, base / "mistakes-course")
    report = grade_class(root, graded, BatchOptions(workers=2, sandbox="bwrap"))
    assert {r.student: r.status for r in report.records} == dict.fromkeys(PLANTED, "graded")
    assert cli_main(["report", "--course", str(graded)]) == 0
    return graded


def groups(course: Path) -> list[dict]:
    return json.loads((course / "reports" / f"{ASSIGNMENT}-mistakes.json").read_text())


def by_students(course: Path) -> dict[tuple[str, ...], dict]:
    return {tuple(group["students"]): group for group in groups(course)}


def test_the_json_holds_one_group_per_way_of_failing_largest_first(course):
    found = by_students(course)
    assert set(found) == {("m_mix", "m_z0_a", "m_z0_b"), ("m_coerced_a", "m_coerced_b"), ("m_mix", "m_scan"),
                          ("m_hostile",)}
    assert [len(g["students"]) for g in groups(course)] == sorted((len(s) for s in found), reverse=True)
    assert [g["index"] for g in groups(course)] == list(range(len(found)))
    for group in groups(course):
        assert {"students", "cells", "properties", "representative", "catalogue"} <= set(group)
        assert {"input", "expected", "obtained"} <= set(group["representative"])


def test_the_uncatalogued_mistake_is_one_group_with_its_counterexample(course):
    z0 = by_students(course)[("m_mix", "m_z0_a", "m_z0_b")]
    assert z0["catalogue"] is None and z0["named"] == ""
    assert z0["cells"] == [TESTS]
    assert [p["property"] for p in z0["properties"]] == ["checkpointed_refuses_bad_arguments"]
    rep = z0["representative"]
    assert "refused_argument='z0'" in rep["input"] and rep["expected"] == "'ValueError raised'"
    assert rep["obtained"] == "'no exception: returned a ReplayRun'"


def test_a_catalogued_group_says_which_entry_it_is(course):
    found = by_students(course)
    assert found[("m_coerced_a", "m_coerced_b")]["catalogue"] == "block_size_coerced"
    assert found[("m_mix", "m_scan")]["catalogue"] == "mismatch_scanned_forward"
    assert set(found[("m_coerced_a", "m_coerced_b")]["cells"]) == set(ENTRIES["block_size_coerced"].loses)


def test_the_report_shows_the_groups_and_escapes_what_students_wrote(course):
    page = (course / "reports" / f"{ASSIGNMENT}-report.html").read_text()
    markdown = (course / "reports" / f"{ASSIGNMENT}-report.md").read_text()
    for text in (page, markdown):
        assert "Mistakes not in the catalogue" in text and "catalogued: block_size_coerced" in text
        assert "not catalogued" in text and "m_z0_a" in text
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in markdown
    assert r"\<script\>alert(1)\</script\> \*\*bold\*\* \| \[link\](x) \`code\`" in markdown
    assert page.index("Mistakes not in the catalogue") < page.index("Slowest submissions")
    rows = table(md_tables(markdown), "group", "obtained")
    assert len(rows) == len(groups(course))
    for row in rows:  # the HTML shows what the Markdown shows
        assert "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row.values()) + "</tr>" in page


def test_a_group_becomes_a_catalogue_entry_and_the_next_student_is_told_its_name(course, tmp_path):
    z0 = by_students(course)[("m_mix", "m_z0_a", "m_z0_b")]
    draft = tmp_path / "draft.py"
    assert cli_main(["catalogue", "draft", "--course", str(course), "--group", str(z0["index"]),
                     "--out", str(draft)]) == 0
    text = draft.read_text()
    assert "@wrong_answer(" in text and f"answer_cell={CELL!r}" in text and f"loses=({TESTS!r},)" in text
    assert "replaces='checkpointed_cotangents'" in text and "checkpointed_refuses_bad_arguments" in text
    assert "# converted" not in text  # comments dropped: the code as graded, read before use
    assert cli_main(["catalogue", "draft", "--course", str(course), "--group", z0["id"]]) == 0  # by id too
    assert cli_main(["catalogue", "draft", "--course", str(course), "--group", "no-such-group"]) != 0
    # The instructor names it, and the catalogue (a temporary copy of Exercise 5's) gains it.
    named = (text.replace('"TODO_name"', '"z0_list_converted"')
             .replace('"TODO: the mistake as a student would name it"', '"A list z0 made an array instead of refused"')
             .replace('"TODO: one or two sentences: what to reconsider, and how."', '"Refuse a list z0: ValueError."'))
    assert "TODO" not in named.split("@wrong_answer", 1)[1]
    copy = tmp_path / "wrong_answers.py"
    copy.write_text(Path(wrong_answers.__file__).read_text() + "\n\n" + named)
    # make release grades the new entry for its kill-table row, which feedback holds the next student to.
    done = subprocess.run([sys.executable, "-c", KILL_TABLE_ROW, str(copy), "z0_list_converted"], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "kill_table.json").read_text())["z0_list_converted"] == {
        TESTS: ["checkpointed_refuses_bad_arguments"]}
    # The next student: the same mistake, written once more in other words.
    nxt = tmp_path / "next.ipynb"
    nbformat.write(submission((), {CELL: z0_answer("np.array(list(z0))", "blocks", "states_of_block")}), nxt)
    done = subprocess.run([sys.executable, "-c", NEXT_STUDENT, str(copy), str(nxt)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = json.loads(done.stdout.splitlines()[-1])
    title = "A list z0 made an array instead of refused"
    assert verdict["misconceptions"] == {"checkpointed_refuses_bad_arguments": title}
    assert 'This matches a known mistake: "A list z0 made an array instead of refused"' in verdict["message"]
    assert "block_size" not in verdict["misconceptions"]["checkpointed_refuses_bad_arguments"]
    assert verdict["rows"] == [[["checkpointed_refuses_bad_arguments"]]]  # held to its row, not named on evidence alone


#: Loads Exercise 5's catalogue from argv[1] (it registers on import, once per process: a fresh process each).
_LOAD_CATALOGUE = """
import importlib.util, json, sys
name = "ch11_autograder.exercises.ex5.wrong_answers"
spec = importlib.util.spec_from_file_location(name, sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
spec.loader.exec_module(module)
"""

#: Writes the kill table beside the catalogue of argv[1]: the committed rows and the row of the entry argv[2],
#: graded now (``make release`` grades them all; the others are the committed ones, graded by test_suites.py).
KILL_TABLE_ROW = _LOAD_CATALOGUE + """
import shutil
from pathlib import Path
from ch11_autograder.authoring import kill_table
from ch11_autograder.exercises.catalogue import KILL_TABLE, catalogue
(entry,) = [e for e in catalogue("ex5") if e.name == sys.argv[2]]
table = json.loads((Path(kill_table.__file__).parents[1] / "exercises" / "ex5" / KILL_TABLE).read_text())
table[entry.name] = kill_table.entry_row("ex5", entry)
(Path(sys.argv[1]).parent / KILL_TABLE).write_text(kill_table.render(table))
"""

#: Grades a notebook's checkpointed cell with Exercise 5's catalogue read from argv[1], in a fresh process,
#: as TrustedVerdicts would after make release.
NEXT_STUDENT = _LOAD_CATALOGUE + """
import nbformat
from ch11_autograder.exercises import WORKER_SKIP_CELLS
from ch11_autograder.exercises.ex5 import suite
from ch11_autograder.trusted.grading import grade_suites
from ch11_autograder.trusted.submission_cells import worker_cells
from ch11_autograder.trusted.worker_client import WorkerSession
from ch11_autograder.untrusted.backends.unsandboxed import UnsandboxedLauncher
cells = worker_cells(nbformat.read(sys.argv[2], as_version=4), skip=set(WORKER_SKIP_CELLS))
with WorkerSession(list(cells.sources), UnsandboxedLauncher(quiet=True), call_timeout=10.0) as session:
    verdict = grade_suites(cells, [suite.CHECKPOINTED_SUITE], session)[suite.CHECKPOINTED_SUITE.grade_id]
(refusals,) = [p for p in suite.CHECKPOINTED_SUITE.properties if p.name == "checkpointed_refuses_bad_arguments"]
named = [m for m in refusals.misconceptions if m.name == "A list z0 made an array instead of refused"]
rows = [[sorted(v) for v in row.values()] for m in named for row in m.fails]
print(json.dumps({"misconceptions": {f.property: f.misconception for f in verdict.failures},
                  "message": verdict.message(), "rows": rows}))
"""


def test_pairs_alone_in_an_uncatalogued_group_are_similarity_evidence(course):
    """The class report's similarity evidence lists the pairs of a rare group no catalogue entry names (the z0
    conversion, three students), not those of a catalogued one (block_size_coerced, two) nor a student alone."""
    data = json.loads((course / "reports" / f"{ASSIGNMENT}-similarity.json").read_text())
    pairs = {tuple(g["students"]) for g in data["rare_groups"]}
    assert pairs == {("m_mix", "m_z0_a"), ("m_mix", "m_z0_b"), ("m_z0_a", "m_z0_b")}
    assert all(g["size"] == 3 and "checkpointed_refuses_bad_arguments" in g["group"] for g in data["rare_groups"])
    page = (course / "reports" / f"{ASSIGNMENT}-report.html").read_text()
    assert "<td>m_z0_a and m_z0_b</td>" in page
