"""Similarity evidence (report/similarity.py) on the demo class's real answers, with and without a planted pair.

The demo class's students answer from the reference solution, some with a mistake of their own: honest
students whose answers agree where the reference does. A planted pair shares an answer of its own, copied
with renamed names, other comments and layout, and carries hostile text in it.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from ch11_autograder.paths import DEMO_CLASS_DIR, SOURCE_DIR
from ch11_autograder.report.render import html_text, markdown_text, similarity_blocks
from ch11_autograder.report.similarity import (
    MIN_FINGERPRINTS,
    Answer,
    answer_cells,
    common_limit,
    find_similar,
    read_answers,
    shared_rare_groups,
    similar_pairs,
    similarity_json,
)


def section_and_appendix(similarity):
    """The section and its appendix (the answers side by side), as the report puts them, in one list."""
    section, appendix = similarity_blocks(similarity)
    return [*section, *appendix]

DEMO = ("ada", "blank", "hal", "lin")
CELL = "ex3_best_block_length"

#: An answer of the planted pair's own (a plain scan, not the reference's closed form), with hostile text.
MIA = '''def best_block_length(depth: int) -> BlockChoice:
    """The uniform block length with the fewest peak states."""
    # </pre><script>alert(1)</script> \u202e tnemmoc
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)):
        raise TypeError("depth must be an integer")
    depth = int(depth)
    if depth < 1:
        raise ValueError("depth must be >= 1")
    costs = [uniform_checkpoint_cost(depth, size) for size in range(1, depth + 1)]
    best = min(costs, key=lambda cost: (cost.peak_state_units, cost.block_size))
    return BlockChoice(depth, best.block_size, best.peak_state_units, best.recomputed_forward_evaluations,
                       math.sqrt(depth))
'''
#: Mia's answer as a copy looks: names changed, comments and blank lines moved, a string reworded.
ZED = re.sub(r"\bsize\b", "k", re.sub(r"\bcost\b", "c", re.sub(r"\bbest\b", "winner", MIA))).replace(
    "    depth = int(depth)\n", "\n    depth = int(depth)  # plain int\n").replace(
    "depth must be an integer", "need an integer depth")
#: Another student's own answer to the same cell, written independently (a while loop over the peak).
UMA = '''def best_block_length(depth: int) -> BlockChoice:
    if type(depth) is bool or not hasattr(depth, "__index__"):
        raise TypeError(f"bad depth {depth!r}")
    L = depth.__index__()
    if L <= 0:
        raise ValueError("need L >= 1")
    peaks = {k: -(-L // k) + k for k in range(1, L + 1)}
    low = min(peaks.values())
    k = min(k for k, v in peaks.items() if v == low)
    info = uniform_checkpoint_cost(L, k)
    return BlockChoice(L, k, info.peak_state_units, info.recomputed_forward_evaluations, L ** 0.5)
'''


def _course(tmp_path: Path, extra: dict[str, str]) -> tuple[Path, list[str]]:
    """A course holding the source notebooks and, as its autograded notebooks, the demo class's submissions
    (grading leaves answer cells as submitted) plus, for each ``extra`` student, ada's with ``CELL`` replaced."""
    course = tmp_path / "course"
    shutil.copytree(SOURCE_DIR, course / "source" / "ch11")
    for student in DEMO:
        shutil.copytree(DEMO_CLASS_DIR / student / "ch11", course / "autograded" / student / "ch11")
    for student, answer in extra.items():
        shutil.copytree(DEMO_CLASS_DIR / "ada" / "ch11", course / "autograded" / student / "ch11")
        path = course / "autograded" / student / "ch11" / "ex3_block_length.ipynb"
        nb = json.loads(path.read_text())
        [cell] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == CELL]
        cell["source"] = answer
        path.write_text(json.dumps(nb))
    return course, [*DEMO, *extra]


def test_honest_students_of_the_demo_class_show_nothing(tmp_path: Path) -> None:
    course, students = _course(tmp_path, {"uma": UMA})
    found = find_similar(course, "ch11", students)
    assert found.answers == 5 * 17 and found.cells == 17
    assert found.pairs == []
    page = html_text(section_and_appendix(found))
    assert "No pair of students has near-identical answers" in page


def test_setting_aside_the_stub_and_the_reference_is_what_keeps_them_out(tmp_path: Path) -> None:
    """The same answers compared with nothing set aside: the students who left the stub, and those who wrote
    the reference, look alike in cell after cell."""
    course, students = _course(tmp_path, {})
    answers, _ = read_answers(course, "ch11", students)
    assert {p.students for p in similar_pairs(answers, {})} >= {("ada", "lin"), ("blank", "hal")}


def test_a_planted_pair_is_shown_side_by_side_and_escaped(tmp_path: Path) -> None:
    course, students = _course(tmp_path, {"mia": MIA, "uma": UMA, "zed": ZED})
    found = find_similar(course, "ch11", students)
    [pair] = found.pairs
    assert pair.students == ("mia", "zed")
    [match] = pair.cells
    assert (match.notebook, match.grade_id) == ("ex3_block_length", CELL)
    assert match.similarity >= 0.8 and match.shared >= 8
    left, right = match.excerpts
    assert (left.student, right.student) == ("mia", "zed")
    assert any("min(costs, key=lambda cost" in line for line in left.lines)
    assert "    depth = int(depth)" in [left.lines[n - 1] for n in left.shared]
    assert all("\u202e" not in line for line in left.lines) and any("\\u202e" in line for line in left.lines)

    page = html_text(section_and_appendix(found))
    assert "<script>" not in page and "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\u202e" not in page
    assert page.count('<table class="side">') == 1 and "<mark>" in page
    assert "evidence, not a verdict" in page and "never published to students" in page
    markdown = markdown_text(section_and_appendix(found))
    assert "\u202e" not in markdown and "```" in markdown and "▶ " in markdown

    data = json.loads(similarity_json(found))
    assert data["v"] == 1 and [p["students"] for p in data["pairs"]] == [["mia", "zed"]]
    assert data["pairs"][0]["cells"][0]["excerpts"][1]["student"] == "zed"


def test_a_backtick_run_in_an_answer_cannot_close_the_markdown_fence() -> None:
    answer = MIA.replace("# </pre>", "# ````` </pre>")
    answers = [Answer("mia", "nb", "g", answer), Answer("zed", "nb", "g", answer)]
    found = similar_pairs(answers, {})
    markdown = markdown_text(section_and_appendix(_similarity(found)))
    fences = [line for line in markdown.splitlines() if line.startswith("`")]
    assert fences and all(line == "``````" for line in fences)


def _similarity(pairs):
    from ch11_autograder.report.similarity import Similarity

    return Similarity(pairs, answers=2, cells=1)


def test_an_answer_mostly_set_aside_is_not_compared() -> None:
    """Two students who changed one line of the reference alike share too little of their own to count."""
    source = answer_cells(json.loads((SOURCE_DIR / "ex3_block_length.ipynb").read_text()))[CELL]
    changed = source.replace("k_lo, _ = _tie_interval(depth)", "_, k_lo = _tie_interval(depth)")
    answers = [Answer("a", "ex3_block_length", CELL, changed), Answer("b", "ex3_block_length", CELL, changed)]
    assert similar_pairs(answers, {("ex3_block_length", CELL): source}) == []


@pytest.mark.parametrize("size", [2, 3])
def test_pairs_sharing_a_rare_failure_group(size: int) -> None:
    members = ["cy", "ann", "bob"][:size]
    groups = [("g-rare", members), ("g-common", ["a", "b", "c", "d", "e"]), ("g-alone", ["x"])]
    found = shared_rare_groups(groups)
    assert {g.group for g in found} == {"g-rare"}
    assert len(found) == size * (size - 1) // 2
    assert all(g.students == tuple(sorted(g.students)) and g.size == size for g in found)


def test_fingerprints_over_several_processes_are_those_of_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from ch11_autograder.report import similarity
    from ch11_autograder.report.fingerprints import fingerprints

    sources = [MIA, ZED, UMA, MIA, "", "x = ("]
    rows, alone = similarity.fingerprint_all(sources, processes=1)
    monkeypatch.setattr(similarity, "POOL_FROM", 1)
    pooled_rows, pooled = similarity.fingerprint_all(sources, processes=2)
    assert pooled_rows == rows and pooled.same(alone)
    assert len(rows) == len(alone) == 5 and alone.fingerprints(rows[""]) == {}
    assert all(alone.fingerprints(rows[s]) == fingerprints(s) for s in sources)


Match = tuple[tuple[str, str], str, float, int, tuple[int, int]]


def test_fresh_fingerprinting_processes_give_the_same_and_import_no_nbgrader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With another thread running, the processes are fresh interpreters (not forks): the same table; and such a
    process, importing the report's fingerprints, does not import nbgrader with the report's data (seconds of
    CPU each, more than fingerprinting thousands of answers)."""
    from ch11_autograder.report import similarity

    sources = [MIA, ZED, UMA, ""]
    rows, alone = similarity.fingerprint_all(sources, processes=1)
    monkeypatch.setattr(similarity, "POOL_FROM", 1)
    started = []
    real = multiprocessing.get_context

    def context(method: str | None = None) -> Any:
        started.append(method)
        return real(method)

    monkeypatch.setattr(similarity.multiprocessing, "get_context", context)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        spawned_rows, spawned = similarity.fingerprint_all(sources, processes=2)
    finally:
        stop.set()
        other.join()
    assert started == ["spawn"] and spawned_rows == rows and spawned.same(alone)
    code = "import sys, ch11_autograder.report.fingerprints; print(sorted(m for m in sys.modules if 'nbgrader' in m))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def _every_two(answers: list[Answer], threshold: float) -> set[Match]:
    """The matches of a cell's answers as the module defines them, comparing every two answers' own fingerprints
    as sets (no index, no arrays): (students, cell, similarity, shared, own counts)."""
    from ch11_autograder.report.fingerprints import fingerprints

    prints = [set(fingerprints(a.source)) for a in answers]
    limit = common_limit(len(answers))
    own = [{h for h in p if sum(h in q for q in prints) <= limit} for p in prints]
    found = set()
    for i, j in itertools.combinations(range(len(answers)), 2):
        shared = len(own[i] & own[j])
        if min(len(own[i]), len(own[j])) < MIN_FINGERPRINTS or not shared:
            continue
        similarity = shared / len(own[i] | own[j])
        if similarity >= threshold:
            (a, ca), (b, cb) = sorted([(answers[i].student, len(own[i])), (answers[j].student, len(own[j]))])
            found.add(((a, b), answers[i].grade_id, round(similarity, 3), shared, (ca, cb)))
    return found


def _family(rng: random.Random) -> list[str]:
    """Lines of a family of answers' own: a helper of arithmetic on drawn constants."""
    lines = ["def helper(a, b):"]
    for _ in range(rng.randint(6, 12)):
        lines.append(f"    a = max(a, len(b)) {rng.choice('+-*%')} {rng.randint(2, 999)}")
        lines.append(f"    b = [a * v for v in range({rng.randint(2, 99)})]")
    return [*lines, "    return a, b"]


def test_the_pairs_are_those_of_comparing_every_two_answers() -> None:
    """The index and the arrays find what comparing every two answers finds. 40 answers to one cell, each
    Mia's answer (every student's: common, set aside) and the helper of its family (1 to 6 students: a helper's
    fingerprints held by more than 4 answers are common too), lines dropped and repeated at random so that the
    overlaps range widely; at a low threshold, many pairs."""
    rng = random.Random(37)
    answers: list[Answer] = []
    while len(answers) < 40:
        family = _family(rng)
        for _ in range(rng.randint(1, 6)):
            lines = [line for line in MIA.splitlines() + family if rng.random() < 0.85]
            if rng.random() < 0.3:
                lines += lines[-rng.randint(1, 8):]
            answers.append(Answer(f"s{len(answers):02d}", "nb", "g", "\n".join(lines) + "\n"))
    expected = _every_two(answers, 0.3)
    found = {(p.students, c.grade_id, c.similarity, c.shared, c.own)
             for p in similar_pairs(answers, {}, threshold=0.3) for c in p.cells}
    assert len(expected) > 20 and found == expected


def test_students_holding_one_answer_are_each_two_a_pair() -> None:
    """Three copies of one answer: every two of the three are a pair (its fingerprints' holders, three in a run,
    give three pairs, not only the neighbours'), with all fingerprints shared."""
    answers = [Answer(s, "nb", "g", MIA) for s in ("cy", "ann", "bob")] + [Answer("uma", "nb", "g", UMA)]
    found = similar_pairs(answers, {})
    assert [p.students for p in found] == [("ann", "bob"), ("ann", "cy"), ("bob", "cy")]
    assert all(c.similarity == 1.0 and c.shared == c.own[0] == c.own[1] for p in found for c in p.cells)


def test_the_pairs_over_the_c_tokenizer_are_those_over_tokenize(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted class compared as the report compares it, and again with every answer read by tokenize
    alone (the C tokenizer's tokens set aside): the same pairs, similarities, excerpts and marked lines."""
    from ch11_autograder.report import fingerprints

    course, students = _course(tmp_path, {"mia": MIA, "uma": UMA, "zed": ZED})
    found = find_similar(course, "ch11", students)
    assert [p.students for p in found.pairs] == [("mia", "zed")]
    monkeypatch.setattr(fingerprints, "_compiler_tokens", lambda source: None)
    assert find_similar(course, "ch11", students) == found
