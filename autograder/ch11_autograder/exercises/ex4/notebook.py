"""Exercise 4: the paper audit (chapter section 11.6's field note, applied to one paper).

Five prose fields of the Paper Autopsy Protocol are graded by hand (one manual cell each,
with a rubric per supported paper); the four structured marks are one answer cell,
``audit_marks() -> dict[str, str]``, scored field by field by the hidden suite against
the paper's answer key.

The student kernel has no access to the reference library, so the vocabularies and the
list of supported papers are written into the notebook as literal data, generated here
from :mod:`ch11_solutions.ex4_audit`. The released stub holds no answer key: the only
place the canonical marks appear is the solution region of ``ex4_audit_marks`` (removed
by nbgrader) and the rubrics of the manual cells (also solution regions).
"""

from __future__ import annotations

import textwrap

from ch11_solutions import ex4_audit as ref

from ..cells import answer, manual_answer, prose, readonly_code, tests
from .contract import MARKS_CELL, MARKS_TESTS, POINTS, prose_cell

# The chapter's field note (section 11.6), quoted in the statement and in every rubric.
_FIELD_NOTE = (
    "What values are retained? What values are replayed? What state makes replay deterministic? "
    "Is the reported saving a count model, allocated bytes, or measured peak device memory?"
)

# What each protocol field asks, in the terms of this chapter. Keys are ref.PROSE_FIELDS.
_PROMPTS: dict[str, str] = {
    "Mathematical object": (
        "What object does the paper's memory claim describe? Name the computation it applies "
        "to (which graph, of what depth or length), what is **retained** during the forward "
        "pass, what is **replayed** during the reverse pass, and the bound it derives for the "
        "retained state and for the extra work, with the equation or algorithm where it is "
        "stated. Compare it with Theorem 11.3. Start the cell with the paper's id."
    ),
    "Evidence culture and interface": (
        "What kind of evidence does the paper offer for each claim: a proof, an asymptotic "
        "count, a planner's output, a measurement (of what, on which hardware and framework)? "
        "Which claims are asserted without evidence? And what is the **interface**: what "
        "does a user of the method set or write, and what does the framework decide?"
    ),
    "Numerical and hardware contract": (
        "Go through the checkpoint-boundary list of section 11.6 for this paper: "
        "floating-point format and accumulation on replay, random-number state of stochastic "
        "primitives, mutable running statistics, control flow that depends on rounded values. "
        "For each, does the paper state what replay must preserve? Then: what exactly do the "
        "paper's memory and speed numbers measure, what do they leave out, and on which device?"
    ),
    "Discriminating control": (
        "Which comparison in the paper separates its contribution from the alternatives "
        "(and which alternatives)? Then propose one control the paper does not run that would "
        "discriminate a claim it leaves untested: the setup, the quantity compared, and what "
        "each outcome would tell you."
    ),
    "Transfer verdict": (
        "Would you rely on the paper's claims for a network you might train (say one with "
        "dropout, batch normalization, reduced precision, or skip connections across "
        "segments)? Give a verdict per claim (the count trade, the byte figures, the speed "
        "cost) and what you would have to add or check before relying on it."
    ),
}

# Rubric points per supported paper and protocol field. Each paper's rubric is checked
# against the answer key at build time: a keyed paper without a rubric is an error.
_RUBRICS: dict[str, dict[str, str]] = {
    "chen2016": {
        "Mathematical object": """
            - (1 pt) Retained, replayed and the bound: the network is divided into $k$ segments;
              the forward pass keeps only each segment's output and drops the feature maps inside
              segments; during backpropagation each segment is re-run forward from its stored
              input (Sec. 4.1, Alg. 1), i.e. about one extra forward pass. Memory
              $O(n/k) + O(k)$, so $O(2\\sqrt n)$ at $k=\\sqrt n$ (Sec. 4.3, Eq. 1): the same
              trade as Theorem 11.3, stated asymptotically. Full credit may also mention the
              recursive variant, $g(n) = k\\log_{k+1} n$, $O(\\log n)$ memory for $O(n\\log n)$
              extra forward work (Sec. 4.4, Eq. 2-3).
            - (1 pt) Graph class and its limit: the algorithm is given for "a linear chain
              feed-forward neural network" and generalises only "as long as we can divide the
              graph into segments" (Sec. 4.1); Alg. 2 (mirror counts) accepts any graph but the
              bound is the chain one; with unequal layer sizes $k=\\sqrt n$ no longer applies and
              Alg. 3 plans against a memory budget $B$ instead (Sec. 4.3). This point is not
              earned by an answer that claims the bound for an arbitrary DAG.
        """,
        "Evidence culture and interface": """
            - (1 pt) Evidence: the memory bound is an asymptotic count argument (Eq. 1-3), not a
              measured quantity; the experiments are systems measurements in MXNet: ResNet
              depths (Sec. 5.2) and an unrolled four-layer LSTM (Sec. 5.3), memory from the
              static allocation plan with nvidia-smi totals as a second panel (Fig. 5), speed
              over 20 batches on one Titan X (Fig. 7, Sec. 5.4). The claim of "equivalent weight
              gradient" (Sec. 5.1) is asserted, not tested by any experiment.
            - (1 pt) Interface: the user sets a mirror count $m(v)$ per node (Alg. 2) or lets
              the planner choose the split from a budget $B$ searched over (Alg. 3, Appendix A);
              Sec. 4.5 asks frameworks for an option to drop cheap results, a planner and a
              mirror attribute; the user no longer writes a custom training loop (the drawback
              of Alg. 1 named in Sec. 4.1).
        """,
        "Numerical and hardware contract": """
            - (1 pt) What the numbers are: feature-map bytes from MXNet's static allocation
              plan, with parameters and convolution workspace excluded (Sec. 5.1); runtime
              totals measured by nvidia-smi on a Titan X are a separate panel (Fig. 5(b)); the
              speed cost is measured on one Titan X (Sec. 5.4). Credit a student who notices that
              the 1,000-layer "48G" baseline could not have been run (Sec. 5.2).
            - (1 pt) Replay contract, against section 11.6's list: the paper states nothing
              about floating-point format or accumulation order on replay, random-number state
              (a dropout mask), running statistics (batch-norm results are exactly what
              Sec. 4.2 proposes to drop and recompute), or data-dependent control flow, while
              Sec. 5.1 says the optimizations give "equivalent weight gradient" and "can always
              be safely applied". Knowledge of what MXNet's executor does is context, not a
              statement of the paper.
        """,
        "Discriminating control": """
            - (1 pt) The paper's own control: the ladder of allocation strategies (no
              optimization, inplace, sharing, drop bn-relu, sublinear plan; Sec. 5.1) separates
              the graph-level savings of Sec. 3 and of dropping cheap results (Sec. 4.2) from
              the recomputation plan, so the sub-linear trend in Fig. 5 is attributable to the
              trade, not to memory sharing.
            - (1 pt) A control the paper lacks, with predicted outcomes, e.g.: compare the
              sublinear plan's gradients with store-all gradients, with dropout or batch norm in
              training mode, under matched and unmatched random streams (Exercise 5: a mismatch
              shows replay is not deterministic); or measure peak device memory for both plans
              at depths where store-all fits, to compare planned with measured savings; or
              relate the measured extra runtime to the extra forward count.
        """,
        "Transfer verdict": """
            - (1 pt) A verdict per claim, with a reason: the count trade (segment outputs kept,
              one extra forward pass) transfers to any network cut into a chain of segments;
              the byte figures ("48G to 7G") are MXNet plan numbers for feature maps only and do
              not predict device memory elsewhere; the 30% runtime cost is one measurement on
              one GPU and framework.
            - (1 pt) What must be added before relying on it: saving and restoring random
              state for stochastic layers, not updating batch-norm running statistics twice on
              replay, a declared replay precision, and separator nodes where skip connections
              cross segment boundaries; none of these is specified by the paper.
        """,
    },
}

_GENERIC_RUBRIC = f"""
    Any paper: the answer is about the paper the student named (the id in `audit_marks()`),
    cites sections, figures or equations for its claims, and keeps the chapter's four
    questions apart: {_FIELD_NOTE} A paper-specific point below earns its credit only with a
    pointer into the paper. Paraphrase is fine; quoting without saying what it implies is not.
"""


def _rubric(field: str) -> str:
    if set(_RUBRICS) != set(ref.SUPPORTED_PAPERS):
        missing = sorted(set(ref.SUPPORTED_PAPERS) ^ set(_RUBRICS))
        raise ValueError(f"exercise 4 rubrics and supported papers differ: {missing}")
    parts = [textwrap.dedent(_GENERIC_RUBRIC).strip()]
    for paper_id in sorted(_RUBRICS):
        text = textwrap.dedent(_RUBRICS[paper_id][field]).strip()
        parts.append(f"**{paper_id}** ({ref.SUPPORTED_PAPERS[paper_id].citation})\n\n{text}")
    return "\n\n".join(parts)


def _literal(obj: object, indent: int = 0, width: int = 96) -> str:
    """Python source for nested dicts/tuples of str, one entry per line, long strings wrapped.

    ``pprint`` aligns continuation lines under the opening brace, which reads badly for
    nested dicts of long descriptions; this keeps a fixed four-space step instead.
    """
    pad, inner = " " * indent, " " * (indent + 4)
    if isinstance(obj, dict):
        lines = [f"{inner}{key!r}: {_literal(value, indent + 4, width)}," for key, value in obj.items()]
        return "{\n" + "\n".join(lines) + f"\n{pad}}}"
    # 60: past that, a value after its key no longer fits a notebook line.
    if isinstance(obj, str) and len(obj) > 60:
        pieces = textwrap.wrap(obj, width - indent - 8, drop_whitespace=False, break_on_hyphens=False)
        return "(\n" + "\n".join(f"{inner}{piece!r}" for piece in pieces) + f"\n{pad})"
    return repr(obj)


def _vocabulary_source() -> str:
    """The read-only data cell: supported papers, field questions and allowed values."""
    papers = {pid: info.citation for pid, info in sorted(ref.SUPPORTED_PAPERS.items())}
    questions = {f: ref.FIELD_QUESTIONS[f] for f in ref.FIELDS}
    values = {f: dict(ref.VALUE_DESCRIPTIONS[f]) for f in ref.FIELDS}
    return "\n".join(
        [
            "# The supported papers (id -> citation); only these can be autograded.",
            f"SUPPORTED_PAPERS = {_literal(papers)}",
            "",
            "# The four marks, in the order they are scored, and the question each answers.",
            f"MARK_FIELDS = {ref.FIELDS!r}",
            f"FIELD_QUESTIONS = {_literal(questions)}",
            "",
            "# For each mark: allowed value -> what it means.",
            f"ALLOWED_VALUES = {_literal(values)}",
        ]
    )


def _vocabulary_tables() -> str:
    """Markdown: one table per mark, generated from the same vocabularies as the data cell."""
    blocks = []
    for field in ref.FIELDS:
        rows = "\n".join(f"| `{value}` | {meaning} |" for value, meaning in ref.VALUE_DESCRIPTIONS[field].items())
        blocks.append(f"**`{field}`**: {ref.FIELD_QUESTIONS[field]}\n\n| value | meaning |\n| --- | --- |\n{rows}")
    return "\n\n".join(blocks)


def _link(identifier: str) -> str:
    """A URL for an ``arXiv:`` or ``doi:`` identifier (the forms :class:`PaperInfo` uses)."""
    if identifier.startswith("arXiv:"):
        return f"https://arxiv.org/abs/{identifier.removeprefix('arXiv:')}"
    return f"https://doi.org/{identifier.removeprefix('doi:')}"


def _paper_list() -> str:
    return "\n".join(
        f"- `{pid}`: {info.citation} <{_link(info.identifier)}>\n"
        f"  Sections, numbered as in the version the key refers to: {'; '.join(info.sections)}."
        for pid, info in sorted(ref.SUPPORTED_PAPERS.items())
    )


_MARKS_CONTRACT = '''
def audit_marks() -> dict[str, str]:
    """Your four structured marks for the paper you audited.

    Returns:
        A plain ``dict`` with exactly these five ``str`` entries:

        - ``"paper"``: the id of the paper you audited, a key of ``SUPPORTED_PAPERS``;
        - ``"graph_class"``, ``"memory_meaning"``, ``"stochastic_replay"``,
          ``"count_vs_wallclock"``: one value each, spelt exactly as a key of
          ``ALLOWED_VALUES[field]`` (case and spaces matter; no other keys).

        For example ``{"paper": "<id>", "graph_class": "<a value>", ...}``.

    Every call returns the same marks (the grader calls the function several times). Returning
    one dict object from every call is fine: the grader reads the marks, it never changes them.

    Scoring: each of the four marks earns one point if the paper's key accepts it, on its
    own (a wrong mark costs only that mark). A paper id outside ``SUPPORTED_PAPERS``, a
    missing or extra key, a value outside a field's vocabulary, or marks that change from
    one call to the next score zero.
    """
'''


def _marks_answer() -> str:
    canonical = ref.reference_marks(sorted(ref.SUPPORTED_PAPERS)[0]).as_dict()
    body = "\n".join(f"        {key!r}: {value!r}," for key, value in canonical.items())
    return (
        _MARKS_CONTRACT.strip("\n")
        + "\n    ### BEGIN SOLUTION\n    return {\n"
        + body
        + "\n    }\n    ### END SOLUTION"
    )


def _join(*blocks: str) -> str:
    """Markdown from hand-written blocks (indented in this file) and generated ones (not)."""
    return "\n\n".join(textwrap.dedent(block).strip() for block in blocks)


def cells() -> list:
    out = [
        prose(
            "ex4-statement",
            f"""
            # Exercise 4 · Paper audit

            > *(Audit.)* Paper audit: Complete the Mathematical object, Evidence culture and
            > interface, Numerical and hardware contract, Discriminating control, and Transfer
            > verdict fields of the Paper Autopsy Protocol for one memory-efficient training
            > paper. Mark which graph class it assumes, whether memory means saved activations
            > or measured device allocation, whether stochastic replay is specified, and whether
            > arithmetic count is confused with wall-clock speed.

            Section 11.5 ends with a warning: Theorem 11.3 is a count model. It does not claim
            that every state has equal size, every primitive has equal cost, or that the
            measured wall-clock optimum is $\\sqrt L$. Section 11.6 adds that replay is exact
            only if the checkpoint boundary declares the state that makes it deterministic. Its
            field note asks four questions of any gradient-memory claim:

            > {_FIELD_NOTE}

            This notebook applies them to one paper. **Part A** (five prose fields) is read and
            graded by hand. **Part B** (four marks) is graded automatically, one point per mark,
            against an answer key for the paper you chose; each key was made by reading the
            paper's full text, and it accepts more than one mark only where the paper is
            honestly ambiguous.
            """,
        ),
        prose(
            "ex4-papers",
            _join(
                """
                ## The paper

                Choose one of the supported papers and read all of it, including the figure
                captions and any appendix. Quote or cite sections for every claim you make about it.
                """,
                _paper_list(),
                """
                The next cell holds the same list, and the vocabularies of Part B, as data. Run it;
                do not change it.
                """,
            ),
        ),
        readonly_code("ex4-vocabulary", _vocabulary_source()),
        prose(
            "ex4-part-a",
            """
            ## Part A · The five protocol fields

            Answer each field in its own cell, in prose (a paragraph or a short list), with
            section, figure or equation references into the paper. Each field is worth
            2 points. Keep what the paper *states* apart from what you *infer* and from what
            you know about an implementation the paper does not describe.
            """,
        ),
    ]
    for number, field in enumerate(ref.PROSE_FIELDS, start=1):
        out.append(prose(f"ex4-field-{number}", f"### A{number} · {field}\n\n{_PROMPTS[field]}"))
        out.append(manual_answer(prose_cell(field), POINTS[prose_cell(field)], _rubric(field)))
    out += [
        prose(
            "ex4-part-b",
            _join(
                """
                ## Part B · The four marks

                Each mark answers one question with one value from a closed list. Mark what the
                paper's text supports, not what its authors' software may do, and mark the
                quantity behind the paper's headline numbers, not every number in it. Then
                write `audit_marks()` to return your marks.
                """,
                _vocabulary_tables(),
            ),
        ),
        answer(MARKS_CELL, _marks_answer()),
        tests(
            MARKS_TESTS,
            POINTS[MARKS_TESTS],
            """
            marks = audit_marks()
            assert type(marks) is dict, f"audit_marks() must return a plain dict, not {type(marks).__name__}"
            expected_keys = ["paper", *MARK_FIELDS]
            assert set(marks) == set(expected_keys), f"use exactly the keys {expected_keys}; got {list(marks)}"
            assert all(type(v) is str for v in marks.values()), "every value must be a str"
            assert marks["paper"] in SUPPORTED_PAPERS, f"paper {marks['paper']!r} is not supported; choose one of {sorted(SUPPORTED_PAPERS)}"
            for field in MARK_FIELDS:
                assert marks[field] in ALLOWED_VALUES[field], f"{field}: {marks[field]!r} is not allowed; choose one of {list(ALLOWED_VALUES[field])}"
            # These checks are about form only: whether each mark is right is decided by the grader.
            print("visible checks passed")
            """,
        ),
        prose(
            "ex4-table",
            """
            Your marks, with what each one claims about the paper. Read them back against your
            Part A answers: a mark and your prose should not contradict each other.
            """,
        ),
        readonly_code(
            "ex4-marks-table",
            """
            marks = audit_marks()
            paper = marks.get("paper")
            print(f"paper: {paper}: {SUPPORTED_PAPERS.get(paper, 'not a supported paper')}\\n")
            print(f"{'mark':<20} {'your value':<25} what it claims")
            print(f"{'-' * 20} {'-' * 25} {'-' * 40}")
            for field in MARK_FIELDS:
                value = marks.get(field)
                claim = ALLOWED_VALUES[field].get(value, "(not an allowed value)")
                print(f"{field:<20} {value!s:<25} {claim}")
            """,
        ),
    ]
    return out
