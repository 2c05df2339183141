"""Exercise 4: the audit marks vocabulary, the answer keys and the partial-credit scorer.

Each check of the reference is paired with a deliberately wrong scorer or key that the
same check rejects, so the checks are shown to be able to fail.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Callable, Mapping

import pytest
from ch11_solutions.ex4_audit import (
    ANSWER_KEYS,
    FIELD_QUESTIONS,
    FIELDS,
    PROSE_FIELDS,
    SUPPORTED_PAPERS,
    VALUE_DESCRIPTIONS,
    AnswerKey,
    AuditMarks,
    AuditScore,
    CountVsWallclock,
    FieldKey,
    GraphClass,
    InvalidMarkError,
    MemoryMeaning,
    StochasticReplay,
    reference_marks,
    score_audit,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import DOCS_DIR

ENUMS = {
    "graph_class": GraphClass,
    "memory_meaning": MemoryMeaning,
    "stochastic_replay": StochasticReplay,
    "count_vs_wallclock": CountVsWallclock,
}
PAPERS = sorted(ANSWER_KEYS)
DOC = DOCS_DIR / "audit-keys.md"

Scorer = Callable[[AuditMarks], AuditScore]


def _with(paper: str, **changes: str) -> AuditMarks:
    return dataclasses.replace(reference_marks(paper), **changes)


def _rejected(paper: str, field: str) -> list[str]:
    accepted = ANSWER_KEYS[paper].fields[field].accepted
    return [m.value for m in ENUMS[field] if m not in accepted]


# --------------------------------------------------------------------------- wrong scorers


def _scorer_ignoring(ignored: str) -> Scorer:
    """A plausible bug: one field is never compared, so it always earns its credit."""

    def scorer(marks: AuditMarks) -> AuditScore:
        key = ANSWER_KEYS[marks.paper]
        credits = {f: 1.0 if f == ignored or getattr(marks, f) in key.fields[f].accepted else 0.0 for f in FIELDS}
        return AuditScore(marks.paper, credits, sum(credits.values()) / 4, {})

    return scorer


def _scorer_canonical_only(marks: AuditMarks) -> AuditScore:
    """A plausible bug: only the canonical answer is credited, defensible alternatives are not."""
    key = ANSWER_KEYS[marks.paper]
    credits = {f: 1.0 if getattr(marks, f) == key.fields[f].canonical else 0.0 for f in FIELDS}
    return AuditScore(marks.paper, credits, sum(credits.values()) / 4, {})


def _scorer_all_or_nothing(marks: AuditMarks) -> AuditScore:
    """A plausible bug: no partial credit."""
    key = ANSWER_KEYS[marks.paper]
    ok = all(getattr(marks, f) in key.fields[f].accepted for f in FIELDS)
    return AuditScore(marks.paper, dict.fromkeys(FIELDS, 1.0 if ok else 0.0), 1.0 if ok else 0.0, {})


# --------------------------------------------------------------------------- checks


def single_field_failures(scorer: Scorer, paper: str) -> list[str]:
    """Every single-field wrong mark must lose exactly that field's credit (0.75 total)."""
    failures = []
    for field in FIELDS:
        for value in _rejected(paper, field):
            score = scorer(_with(paper, **{field: value}))
            expected = {f: 0.0 if f == field else 1.0 for f in FIELDS}
            if dict(score.credits) != expected or score.total != 0.75:
                failures.append(f"{field}={value}: credits {dict(score.credits)}, total {score.total}")
    return failures


def alternative_failures(scorer: Scorer, paper: str) -> list[str]:
    """Every accepted value of every field, with the rest canonical, must score 1.0."""
    failures = []
    for field in FIELDS:
        for value in ANSWER_KEYS[paper].fields[field].accepted:
            score = scorer(_with(paper, **{field: value.value}))
            if score.total != 1.0:
                failures.append(f"{field}={value.value}: total {score.total}")
    return failures


_SEC = re.compile(r"Sec\.\s*(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?")


def unknown_section_references(text: str, sections: tuple[str, ...]) -> list[str]:
    """Section numbers cited in ``text`` (``Sec. 4.3``, ``Sec. 4.1-4.5``) that the paper lacks."""
    numbers = {heading.split()[0] for heading in sections}
    cited = []
    for first, last in _SEC.findall(text):
        cited.append(first)
        if last:
            cited.append(last)
    return [number for number in cited if number not in numbers]


def free_credit_fields(key: AnswerKey) -> list[str]:
    """Fields whose key accepts every value (so the field would measure nothing)."""
    return [f for f in FIELDS if key.fields[f].accepted == frozenset(ENUMS[f])]


# --------------------------------------------------------------------------- the reference


@pytest.mark.parametrize("paper", PAPERS)
def test_canonical_marks_score_full_credit(paper):
    score = score_audit(reference_marks(paper))
    assert dict(score.credits) == dict.fromkeys(FIELDS, 1.0)
    assert score.total == 1.0
    assert score.earned == 4.0
    assert dict(score.feedback) == {}
    assert score.paper == paper


@pytest.mark.parametrize("paper", PAPERS)
def test_single_wrong_field_loses_exactly_that_field(paper):
    assert single_field_failures(score_audit, paper) == []
    # The loop really exercised something for every field.
    assert all(_rejected(paper, f) for f in FIELDS)


@pytest.mark.parametrize("paper", PAPERS)
@pytest.mark.parametrize("ignored", FIELDS)
def test_a_scorer_that_ignores_a_field_is_caught(paper, ignored):
    failures = single_field_failures(_scorer_ignoring(ignored), paper)
    assert failures, f"ignoring {ignored} went unnoticed"
    assert all(line.startswith(f"{ignored}=") for line in failures)


@pytest.mark.parametrize("paper", PAPERS)
def test_an_all_or_nothing_scorer_is_caught(paper):
    assert single_field_failures(_scorer_all_or_nothing, paper)


@pytest.mark.parametrize("paper", PAPERS)
def test_every_accepted_alternative_earns_credit(paper):
    assert alternative_failures(score_audit, paper) == []


def test_a_canonical_only_scorer_is_caught():
    # chen2016 accepts two graph classes, so a scorer blind to alternatives must fail there.
    assert len(ANSWER_KEYS["chen2016"].fields["graph_class"].accepted) == 2
    assert alternative_failures(_scorer_canonical_only, "chen2016") == ["graph_class=segmented_dag: total 0.75"]


@pytest.mark.parametrize("paper", PAPERS)
@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(data=st.data())
def test_score_is_accepted_fields_over_four(paper, data):
    marks = {f: data.draw(st.sampled_from([m.value for m in ENUMS[f]]), label=f) for f in FIELDS}
    key = ANSWER_KEYS[paper]
    hits = {f: marks[f] in {v.value for v in key.fields[f].accepted} for f in FIELDS}
    score = score_audit({"paper": paper, **marks})
    assert score.total == sum(hits.values()) / 4
    assert dict(score.credits) == {f: float(hits[f]) for f in FIELDS}
    assert set(score.feedback) == {f for f in FIELDS if not hits[f]}


@pytest.mark.parametrize("paper", PAPERS)
def test_exhaustive_combinations_match_the_key_sizes(paper):
    key = ANSWER_KEYS[paper]
    totals = [score_audit(AuditMarks(paper, *combo)).total for combo in itertools.product(*(ENUMS[f] for f in FIELDS))]
    assert len(totals) == math.prod(len(ENUMS[f]) for f in FIELDS)
    assert totals.count(1.0) == math.prod(len(key.fields[f].accepted) for f in FIELDS)
    assert totals.count(0.0) == math.prod(len(_rejected(paper, f)) for f in FIELDS)
    assert set(totals) <= {0.0, 0.25, 0.5, 0.75, 1.0}


def test_feedback_names_the_mark_the_accepted_values_and_the_section():
    score = score_audit(_with("chen2016", stochastic_replay="not_applicable"))
    text = score.feedback["stochastic_replay"]
    key = ANSWER_KEYS["chen2016"].fields["stochastic_replay"]
    assert text.startswith("stochastic_replay: you marked 'not_applicable'; the key accepts 'not_specified'.")
    assert key.rationale in text
    assert key.support in text
    assert list(score.feedback) == ["stochastic_replay"]


def test_feedback_lists_alternatives_in_vocabulary_order():
    text = score_audit(_with("chen2016", graph_class="tree")).feedback["graph_class"]
    assert "the key accepts 'chain' or 'segmented_dag'." in text


def test_scoring_is_deterministic():
    marks = {
        "paper": "chen2016",
        "graph_class": "general_dag",
        "memory_meaning": "measured_device_peak",
        "stochastic_replay": "specified",
        "count_vs_wallclock": "confused",
    }
    first, second = score_audit(marks), score_audit(dict(reversed(list(marks.items()))))
    assert first == second
    assert list(first.feedback.items()) == list(second.feedback.items())
    assert list(first.feedback) == list(FIELDS)


# --------------------------------------------------------------------------- inputs


def test_mapping_and_record_inputs_score_alike():
    as_record = _with("chen2016", memory_meaning="saved_activations_count")
    as_strings = score_audit(as_record.as_dict())
    as_enums = score_audit({"paper": "chen2016", **{f: getattr(as_record, f) for f in FIELDS}})
    assert as_strings == as_enums == score_audit(as_record)
    assert as_strings.total == 0.75


def test_strings_become_enum_members_that_still_compare_as_strings():
    marks = reference_marks("chen2016")
    assert marks.graph_class is GraphClass.CHAIN
    assert marks.graph_class == "chain"
    assert marks.as_dict() == {
        "paper": "chen2016",
        "graph_class": "chain",
        "memory_meaning": "planned_allocation",
        "stochastic_replay": "not_specified",
        "count_vs_wallclock": "kept_separate",
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        marks.graph_class = GraphClass.TREE


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("bad", ["Chain", " chain", "", "measured", 3, None, True])
def test_bad_value_names_the_field_and_lists_the_allowed_values(field, bad):
    values = reference_marks("chen2016").as_dict()
    values[field] = bad
    with pytest.raises(InvalidMarkError) as caught:
        AuditMarks(**values)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.field == field
    assert error.allowed == tuple(m.value for m in ENUMS[field])
    message = str(error)
    assert message.startswith(f"{field}: ")
    for value in error.allowed:
        assert repr(value) in message


def test_a_value_from_another_fields_vocabulary_is_rejected():
    with pytest.raises(InvalidMarkError, match=r"^memory_meaning: 'chain' is not an allowed value"):
        _with("chen2016", memory_meaning="chain")


@pytest.mark.parametrize("paper", ["", "   ", None, 2016])
def test_paper_id_must_be_a_nonempty_string(paper):
    with pytest.raises(InvalidMarkError) as caught:
        AuditMarks(paper, "chain", "planned_allocation", "not_specified", "kept_separate")
    assert caught.value.field == "paper"


def test_marks_for_an_unkeyed_paper_are_recorded_but_not_scored():
    marks = AuditMarks("gruslys2016", "recurrent_unrolled", "saved_activations_count", "not_specified", "kept_separate")
    with pytest.raises(ValueError, match=r"paper 'gruslys2016' has no answer key; supported papers: 'chen2016'"):
        score_audit(marks)
    with pytest.raises(ValueError, match="supported papers: 'chen2016'"):
        score_audit({**marks.as_dict(), "paper": "Chen2016"})
    with pytest.raises(ValueError, match="supported papers"):
        reference_marks("griewank2000")


def test_mapping_with_a_missing_key_names_it():
    values = reference_marks("chen2016").as_dict()
    del values["count_vs_wallclock"]
    with pytest.raises(InvalidMarkError, match=r"^count_vs_wallclock: missing") as caught:
        score_audit(values)
    assert caught.value.field == "count_vs_wallclock"


def test_mapping_with_a_misspelt_key_is_rejected_not_ignored():
    values = reference_marks("chen2016").as_dict()
    values["graph_clas"] = values.pop("graph_class")
    with pytest.raises(InvalidMarkError, match="graph_class: missing"):
        score_audit(values)
    values = {**reference_marks("chen2016").as_dict(), "notes": "extra"}
    with pytest.raises(InvalidMarkError, match=r"unexpected key\(s\) 'notes'"):
        score_audit(values)


@pytest.mark.parametrize("not_marks", [None, "chen2016", ["chen2016", "chain"], 4])
def test_non_mapping_input_is_refused(not_marks):
    with pytest.raises(InvalidMarkError, match="expected AuditMarks or a mapping"):
        score_audit(not_marks)


# --------------------------------------------------------------------------- the keys


def test_keys_and_papers_cover_the_same_ids():
    assert set(SUPPORTED_PAPERS) == set(ANSWER_KEYS) == {"chen2016"}
    info = SUPPORTED_PAPERS["chen2016"]
    assert info.identifier == "arXiv:1604.06174"
    assert info.citation == (
        "Chen, Xu, Zhang, Guestrin (2016). Training Deep Nets with Sublinear Memory Cost. "
        "arXiv preprint, arXiv:1604.06174."
    )


@pytest.mark.parametrize("paper", PAPERS)
def test_each_key_is_well_formed(paper):
    key = ANSWER_KEYS[paper]
    assert key.paper_id == paper
    assert tuple(key.fields) == FIELDS
    for field in FIELDS:
        fk = key.fields[field]
        assert fk.canonical in fk.accepted
        assert all(isinstance(v, ENUMS[field]) for v in fk.accepted)
        assert fk.rationale.endswith(".")
        assert len(fk.rationale) < 600
    assert free_credit_fields(key) == []


def test_a_key_that_accepts_everything_is_flagged():
    reference = ANSWER_KEYS["chen2016"]
    lax = AnswerKey(
        "chen2016",
        {
            **reference.fields,
            "memory_meaning": dataclasses.replace(
                reference.fields["memory_meaning"], accepted=frozenset(MemoryMeaning)
            ),
        },
    )
    assert free_credit_fields(lax) == ["memory_meaning"]


@pytest.mark.parametrize("paper", PAPERS)
def test_keys_cite_only_sections_the_paper_has(paper):
    sections = SUPPORTED_PAPERS[paper].sections
    for field in FIELDS:
        fk = ANSWER_KEYS[paper].fields[field]
        assert _SEC.search(fk.support), f"{field}: support names no section"
        assert unknown_section_references(fk.support + " " + fk.rationale, sections) == []


def test_an_invented_section_number_is_caught():
    sections = SUPPORTED_PAPERS["chen2016"].sections
    assert unknown_section_references("Sec. 4.3 and Sec. 7.2", sections) == ["7.2"]
    assert unknown_section_references("Sec. 4.1-4.9", sections) == ["4.9"]


def test_field_key_rejects_a_canonical_outside_accepted():
    with pytest.raises(ValueError, match="not among the accepted"):
        FieldKey(frozenset({GraphClass.CHAIN}), GraphClass.TREE, "Sec. 1", "Because.")
    with pytest.raises(ValueError, match="one vocabulary"):
        FieldKey(frozenset({GraphClass.CHAIN, MemoryMeaning.UNSPECIFIED}), GraphClass.CHAIN, "Sec. 1", "Because.")
    with pytest.raises(ValueError, match="at least one"):
        FieldKey(frozenset(), GraphClass.CHAIN, "Sec. 1", "Because.")


def test_answer_key_rejects_a_field_keyed_with_the_wrong_vocabulary():
    fields = dict(ANSWER_KEYS["chen2016"].fields)
    fields["graph_class"] = fields["memory_meaning"]
    with pytest.raises(ValueError, match="graph_class: keyed with MemoryMeaning"):
        AnswerKey("chen2016", fields)
    with pytest.raises(ValueError, match="exactly the fields"):
        AnswerKey("chen2016", {f: fields[f] for f in reversed(FIELDS)})


def test_published_tables_are_read_only():
    with pytest.raises(TypeError):
        ANSWER_KEYS["chen2016"] = ANSWER_KEYS["chen2016"]  # type: ignore[index]
    with pytest.raises(TypeError):
        ANSWER_KEYS["chen2016"].fields["graph_class"] = None  # type: ignore[index]


def test_every_value_and_field_is_described():
    assert set(FIELD_QUESTIONS) == set(VALUE_DESCRIPTIONS) == set(FIELDS)
    for field in FIELDS:
        assert tuple(VALUE_DESCRIPTIONS[field]) == tuple(m.value for m in ENUMS[field])
    assert len(PROSE_FIELDS) == 5


# --------------------------------------------------------------------------- the doc


def _doc_rows(paper: str) -> Mapping[str, str]:
    """The accepted-values column of each field's row in the paper's table of the doc."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split(f"<!-- key: {paper} -->", 1)[1].split("<!-- end key -->", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].strip("`") in FIELDS:
            rows[cells[0].strip("`")] = cells[1]
    return rows


@pytest.mark.parametrize("paper", PAPERS)
def test_doc_table_states_the_same_accepted_values(paper):
    rows = _doc_rows(paper)
    assert set(rows) == set(FIELDS)
    for field in FIELDS:
        stated = set(re.findall(r"`([a-z_]+)`", rows[field]))
        assert stated == {v.value for v in ANSWER_KEYS[paper].fields[field].accepted}, field
