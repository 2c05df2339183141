"""Exercise 4: the structured marks of the paper audit, their answer keys, and a scorer.

The exercise asks for five prose fields of the Paper Autopsy Protocol (graded by hand,
see :data:`PROSE_FIELDS`) and four marks, which are the autograded part:

    graph_class         which graph class the paper's memory bound assumes
    memory_meaning      what the paper's reported memory numbers measure
    stochastic_replay   whether replay of stochastic operations is specified
    count_vs_wallclock  whether operation counts are confused with wall-clock speed

Each mark is a closed vocabulary of strings (:class:`GraphClass`,
:class:`MemoryMeaning`, :class:`StochasticReplay`, :class:`CountVsWallclock`). The
meaning of every value, and the decision rule for each question, is in
:data:`VALUE_DESCRIPTIONS` and :data:`FIELD_QUESTIONS`; docs/audit-keys.md records, per
paper and field, the accepted answers, the supporting section and what was read where.

Scoring contract (:func:`score_audit`): each of the four fields earns 1.0 if the mark is
in that field's accepted set for the paper and 0.0 otherwise, independently of the other
fields; ``total`` is the earned sum divided by 4, so it is always one of 0, 0.25, 0.5,
0.75, 1 (all exact in binary floating point). A key accepts more than one value only
where the paper itself is honestly ambiguous; every key rejects at least one value per
field, so no field is free credit.

Only papers whose text was read for every field are keyed (:data:`SUPPORTED_PAPERS`).
Marks for another paper can still be recorded in an :class:`AuditMarks`, but
:func:`score_audit` refuses them with a ``ValueError`` that lists the supported ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "ANSWER_KEYS",
    "FIELDS",
    "FIELD_QUESTIONS",
    "PROSE_FIELDS",
    "SUPPORTED_PAPERS",
    "VALUE_DESCRIPTIONS",
    "AnswerKey",
    "AuditMarks",
    "AuditScore",
    "CountVsWallclock",
    "FieldKey",
    "GraphClass",
    "InvalidMarkError",
    "MemoryMeaning",
    "PaperInfo",
    "StochasticReplay",
    "reference_marks",
    "score_audit",
]


# --------------------------------------------------------------------------- vocabulary


class GraphClass(StrEnum):
    """The graph class for which the paper derives its headline memory/recompute bound."""

    CHAIN = "chain"
    SEGMENTED_DAG = "segmented_dag"
    GENERAL_DAG = "general_dag"
    TREE = "tree"
    RECURRENT_UNROLLED = "recurrent_unrolled"


class MemoryMeaning(StrEnum):
    """What quantity the paper's reported memory numbers are."""

    SAVED_ACTIVATIONS_COUNT = "saved_activations_count"
    PLANNED_ALLOCATION = "planned_allocation"
    MEASURED_DEVICE_PEAK = "measured_device_peak"
    UNSPECIFIED = "unspecified"


class StochasticReplay(StrEnum):
    """Whether the paper says how random state is reproduced when a value is recomputed."""

    SPECIFIED = "specified"
    NOT_SPECIFIED = "not_specified"
    NOT_APPLICABLE = "not_applicable"


class CountVsWallclock(StrEnum):
    """Whether arithmetic (operation) counts are kept apart from measured wall-clock time."""

    KEPT_SEPARATE = "kept_separate"
    CONFUSED = "confused"
    WALLCLOCK_NOT_REPORTED = "wallclock_not_reported"


#: The four autograded fields, in scoring and reporting order.
FIELDS: tuple[str, ...] = ("graph_class", "memory_meaning", "stochastic_replay", "count_vs_wallclock")

_ENUMS: Mapping[str, type[StrEnum]] = MappingProxyType(
    {
        "graph_class": GraphClass,
        "memory_meaning": MemoryMeaning,
        "stochastic_replay": StochasticReplay,
        "count_vs_wallclock": CountVsWallclock,
    }
)

#: The five prose fields of the Paper Autopsy Protocol the exercise asks for (graded by hand).
PROSE_FIELDS: tuple[str, ...] = (
    "Mathematical object",
    "Evidence culture and interface",
    "Numerical and hardware contract",
    "Discriminating control",
    "Transfer verdict",
)

#: The question each autograded field answers, with its decision rule.
FIELD_QUESTIONS: Mapping[str, str] = MappingProxyType(
    {
        "graph_class": (
            "For which class of computation graph does the paper derive its headline memory (and "
            "recomputation) bound? Mark the class the bound is proved or computed for, not every "
            "architecture the method is later run on."
        ),
        "memory_meaning": (
            "What quantity are the memory numbers the paper reports: a count of retained states, "
            "bytes from a static allocation plan, or measured device memory? Mark the quantity "
            "behind the headline numbers."
        ),
        "stochastic_replay": (
            "When a discarded value is recomputed, does the paper say how random-number state "
            "(e.g. a dropout mask) is reproduced, so that replay equals the original forward pass?"
        ),
        "count_vs_wallclock": (
            "Does the paper keep arithmetic counts (extra forward passes, operations) apart from "
            "measured wall-clock time, or does it claim speed from counts?"
        ),
    }
)

#: The meaning of every allowed value, per field (the order is the enum's order).
VALUE_DESCRIPTIONS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "graph_class": MappingProxyType(
            {
                "chain": (
                    "a linear chain: a sequence of n layers or steps, each consuming only the "
                    "previous one's output (the setting of Theorem 11.3)"
                ),
                "segmented_dag": (
                    "a DAG that is cut at chosen separator nodes into a sequence of segments, so "
                    "that the segments themselves form a chain"
                ),
                "general_dag": "an arbitrary directed acyclic graph, with no segmentation assumed",
                "tree": "a tree-shaped computation (e.g. a tree-structured or recursive network)",
                "recurrent_unrolled": (
                    "a recurrent network unrolled over time: a chain of time steps that share parameters"
                ),
            }
        ),
        "memory_meaning": MappingProxyType(
            {
                "saved_activations_count": (
                    "a count model: the number of retained states/feature maps (or slots), not bytes"
                ),
                "planned_allocation": (
                    "bytes assigned by a static memory planner or allocator plan, computed before execution"
                ),
                "measured_device_peak": (
                    "device memory measured while running (e.g. a profiler or nvidia-smi reading)"
                ),
                "unspecified": "the paper reports 'memory' without saying which of the above it is",
            }
        ),
        "stochastic_replay": MappingProxyType(
            {
                "specified": (
                    "the paper states how random state is saved/restored (or that stochastic "
                    "ops are kept, not recomputed) so replay matches the forward pass"
                ),
                "not_specified": (
                    "stochastic operations are within the method's claimed scope, but the paper "
                    "does not say how their random state is replayed"
                ),
                "not_applicable": (
                    "the paper's stated setting contains no stochastic operations (e.g. a "
                    "deterministic time-stepping code)"
                ),
            }
        ),
        "count_vs_wallclock": MappingProxyType(
            {
                "kept_separate": (
                    "operation counts and measured wall-clock time are both reported and labelled as what they are"
                ),
                "confused": (
                    "speed or time is claimed from operation counts without a measurement, or "
                    "counts are presented as time"
                ),
                "wallclock_not_reported": ("only counts are reported and no speed claim is made from them"),
            }
        ),
    }
)


class InvalidMarkError(ValueError):
    """A mark that is not one of its field's allowed values (or a malformed mark record).

    Attributes:
        field: the name of the offending field (``"paper"``, one of :data:`FIELDS`, or
            ``"<marks>"`` for a record that is not a mapping of the right keys).
        allowed: the allowed values for that field, empty where no closed set applies.
    """

    def __init__(self, field: str, message: str, allowed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.field = field
        self.allowed = allowed


def _allowed(field: str) -> tuple[str, ...]:
    return tuple(member.value for member in _ENUMS[field])


def _coerce(field: str, value: object) -> StrEnum:
    enum = _ENUMS[field]
    allowed = _allowed(field)
    listing = ", ".join(repr(v) for v in allowed)
    # Exact match only: a near miss ("Chain", " chain") is a wrong pick, not a typo to guess at.
    if isinstance(value, str) and value in allowed:
        return enum(value)
    got = repr(value) if isinstance(value, str) else f"a {type(value).__name__}"
    raise InvalidMarkError(field, f"{field}: {got} is not an allowed value; choose one of {listing}", allowed)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class AuditMarks:
    """A student's four structured marks for one paper.

    Construct with strings (``AuditMarks("chen2016", "chain", ...)``) or enum members;
    strings are converted to the field's enum, so every field compares equal to its
    string value afterwards. Validation is exact (case and whitespace matter).

    Attributes:
        paper: the paper id, a non-empty ``str``. It is not checked against
            :data:`SUPPORTED_PAPERS` here (marks for an unkeyed paper can be recorded for
            hand grading); :func:`score_audit` checks it.
        graph_class, memory_meaning, stochastic_replay, count_vs_wallclock: one allowed
            value each, see :data:`VALUE_DESCRIPTIONS`.

    Raises:
        InvalidMarkError (a ``ValueError``): naming the first bad field, in the order
            ``paper``, then :data:`FIELDS`, and listing that field's allowed values.
    """

    paper: str
    graph_class: GraphClass
    memory_meaning: MemoryMeaning
    stochastic_replay: StochasticReplay
    count_vs_wallclock: CountVsWallclock

    def __post_init__(self) -> None:
        if not isinstance(self.paper, str) or not self.paper.strip():
            raise InvalidMarkError("paper", f"paper: expected a non-empty paper id string, got {self.paper!r}")
        for field in FIELDS:
            object.__setattr__(self, field, _coerce(field, getattr(self, field)))

    @classmethod
    def from_mapping(cls, marks: Mapping[str, object]) -> AuditMarks:
        """Build marks from a mapping with exactly the keys ``paper`` and :data:`FIELDS`.

        Raises:
            InvalidMarkError: a missing key, an unexpected key (a misspelt field would
                otherwise be silently ignored), or a bad value; the message names the key.
        """
        if not isinstance(marks, Mapping):
            raise InvalidMarkError("<marks>", f"expected AuditMarks or a mapping, got a {type(marks).__name__}")
        expected = ("paper", *FIELDS)
        missing = [key for key in expected if key not in marks]
        if missing:
            raise InvalidMarkError(missing[0], f"{missing[0]}: missing; the marks need the keys {', '.join(expected)}")
        extra = sorted(repr(key) for key in marks if key not in expected)
        if extra:
            raise InvalidMarkError(
                "<marks>", f"unexpected key(s) {', '.join(extra)}; the marks take exactly {', '.join(expected)}"
            )
        return cls(**{key: marks[key] for key in expected})

    def as_dict(self) -> dict[str, str]:
        """The marks as plain strings, keys in the order ``paper``, then :data:`FIELDS`."""
        return {f.name: str(getattr(self, f.name)) for f in dataclass_fields(self)}


@dataclass(frozen=True)
class PaperInfo:
    """Bibliographic record of a keyed paper, and where its text was read.

    Attributes:
        paper_id: the id students use (e.g. ``"chen2016"``).
        authors: author surnames, in the paper's order.
        year: publication year.
        title: the paper's title.
        venue: where it appeared.
        identifier: a stable identifier (arXiv id or DOI).
        sections: the numbered headings of the version read, as ``"number title"``;
            every ``Sec.`` reference in the paper's key must name one of these numbers.
        source_read: where the text behind the key was read.
    """

    paper_id: str
    authors: tuple[str, ...]
    year: int
    title: str
    venue: str
    identifier: str
    sections: tuple[str, ...]
    source_read: str

    @property
    def citation(self) -> str:
        """A one-line citation, e.g. ``Chen, Xu, Zhang, Guestrin (2016). Training ...``."""
        return f"{', '.join(self.authors)} ({self.year}). {self.title}. {self.venue}, {self.identifier}."


@dataclass(frozen=True)
class FieldKey:
    """The key for one field of one paper.

    Attributes:
        accepted: every value that earns the field's credit (more than one only where the
            paper is honestly ambiguous); a ``frozenset`` of the field's enum members.
        canonical: the single answer :func:`reference_marks` gives; a member of ``accepted``.
        support: where in the paper the answer is grounded (section, figure, algorithm).
        rationale: one sentence a grader can show a student.

    Raises:
        ValueError: ``accepted`` empty, mixing enum types, or not containing ``canonical``.
    """

    accepted: frozenset[StrEnum]
    canonical: StrEnum
    support: str
    rationale: str

    def __post_init__(self) -> None:
        if not self.accepted:
            raise ValueError("a field key must accept at least one value")
        if len({type(v) for v in self.accepted} | {type(self.canonical)}) != 1:
            raise ValueError("accepted values and the canonical answer must come from one vocabulary")
        if self.canonical not in self.accepted:
            raise ValueError(f"canonical answer {self.canonical.value!r} is not among the accepted values")
        if not self.support.strip() or not self.rationale.strip():
            raise ValueError("a field key needs a support location and a rationale")

    def accepted_in_order(self) -> tuple[str, ...]:
        """The accepted values as strings, in the vocabulary's declaration order."""
        return tuple(m.value for m in type(self.canonical) if m in self.accepted)


@dataclass(frozen=True)
class AnswerKey:
    """The key for one paper: a :class:`FieldKey` for each of :data:`FIELDS`.

    Raises:
        ValueError: a field missing or extra, or a field keyed with another field's
            vocabulary.
    """

    paper_id: str
    fields: Mapping[str, FieldKey]

    def __post_init__(self) -> None:
        if tuple(self.fields) != FIELDS:
            raise ValueError(f"an answer key needs exactly the fields {FIELDS}, in that order")
        for name, key in self.fields.items():
            if not isinstance(key.canonical, _ENUMS[name]):
                raise ValueError(f"{name}: keyed with {type(key.canonical).__name__}, expected {_ENUMS[name].__name__}")
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))


@dataclass(frozen=True)
class AuditScore:
    """The score of one set of marks.

    Attributes:
        paper: the paper id scored.
        credits: per field (in :data:`FIELDS` order) 1.0 if the mark is accepted, else 0.0.
        total: the fraction earned, ``sum(credits.values()) / 4``, in {0, .25, .5, .75, 1}.
        feedback: for each wrong field only (same order), a string naming the mark given,
            the accepted values, the key's rationale and the supporting section.
    """

    paper: str
    credits: Mapping[str, float]
    total: float
    feedback: Mapping[str, str]

    @property
    def earned(self) -> float:
        """The number of fields credited, as a float in {0, 1, 2, 3, 4}."""
        return sum(self.credits.values())


# --------------------------------------------------------------------------- keyed papers

_CHEN_SOURCE = (
    "arXiv:1604.06174 text (with Appendix A) as transcribed to Markdown in the public repository "
    "staggeredsix/pdf-to-podcast-demo, services/AgentService/sample.md (commit e50d21b0); the "
    "Sec. 5.1 and Fig. 5 sentences quoted in docs/audit-keys.md match two other transcriptions "
    "verbatim. Figures were not available as images, only their captions."
)

_PAPERS: dict[str, PaperInfo] = {
    "chen2016": PaperInfo(
        paper_id="chen2016",
        authors=("Chen", "Xu", "Zhang", "Guestrin"),
        year=2016,
        title="Training Deep Nets with Sublinear Memory Cost",
        venue="arXiv preprint",
        identifier="arXiv:1604.06174",
        sections=(
            "1 Introduction",
            "2 Related Works",
            "3 Memory Optimization with Computation Graph",
            "4 Trade Computation for Memory",
            "4.1 General Methodology",
            "4.2 Drop the Results of Low Cost Operations",
            "4.3 An O(sqrt(n)) Memory Cost Algorithm",
            "4.4 More General View: Recursion and Subroutine",
            "4.5 Guideline for Deep Learning Frameworks",
            "5 Experiments",
            "5.1 Experiment Setup",
            "5.2 Deep Convolutional Network",
            "5.3 LSTM for Long Sequences",
            "5.4 Impact on Training Speed",
            "6 Conclusion",
            "A Search over Budget B",
        ),
        source_read=_CHEN_SOURCE,
    ),
}

_KEYS: dict[str, AnswerKey] = {
    "chen2016": AnswerKey(
        paper_id="chen2016",
        fields={
            "graph_class": FieldKey(
                accepted=frozenset({GraphClass.CHAIN, GraphClass.SEGMENTED_DAG}),
                canonical=GraphClass.CHAIN,
                support="Sec. 4.1 (Alg. 1) and Sec. 4.3 (Eq. 1)",
                rationale=(
                    "The O(sqrt(n)) bound is derived for an n-layer network divided into k equal "
                    "segments (Sec. 4.3, Eq. 1) and the algorithm is presented for 'a linear chain "
                    "feed-forward neural network' (Sec. 4.1, Alg. 1), extending to other graphs only 'as long as "
                    "we can divide the graph into segments' (Sec. 4.1), so the bound assumes a chain "
                    "(or a DAG cut into a chain of segments), not an arbitrary DAG, a tree, or "
                    "specifically an unrolled RNN."
                ),
            ),
            "memory_meaning": FieldKey(
                accepted=frozenset({MemoryMeaning.PLANNED_ALLOCATION}),
                canonical=MemoryMeaning.PLANNED_ALLOCATION,
                support="Sec. 5.1, Fig. 5 caption, Sec. 5.2",
                rationale=(
                    "Sec. 5.1 reports 'the exact memory cost spend on feature maps' from MXNet's "
                    "static allocation (parameters and convolution workspace excluded) and Fig. 5(a) "
                    "is 'generated from static memory allocation plan', with nvidia-smi totals only "
                    "as a second panel (Fig. 5(b)); the O(sqrt(n)) of Sec. 4.3 is a count model, but "
                    "the headline '48G to 7G' is planned bytes, since Sec. 5.2 says only a 200-layer "
                    "ResNet fits on their best GPU without the new plan, so 48G was never measured."
                ),
            ),
            "stochastic_replay": FieldKey(
                accepted=frozenset({StochasticReplay.NOT_SPECIFIED}),
                canonical=StochasticReplay.NOT_SPECIFIED,
                support="Sec. 2, Sec. 4.1-4.5, Sec. 5.1 (no passage on random state)",
                rationale=(
                    "The method is offered for 'general deep neural networks' (Sec. 2) and Sec. 5.1 "
                    "says the optimizations 'can always be safely applied', yet no section says how "
                    "random state such as a dropout mask is reproduced when a dropped result is "
                    "recomputed, so stochastic replay is in scope but not specified."
                ),
            ),
            "count_vs_wallclock": FieldKey(
                accepted=frozenset({CountVsWallclock.KEPT_SEPARATE}),
                canonical=CountVsWallclock.KEPT_SEPARATE,
                support="Sec. 4.3, Sec. 5.4, Fig. 7 caption",
                rationale=(
                    "The paper states the extra work as a count ('an additional forward pass', "
                    "Sec. 4.3) and separately measures speed on a Titan X GPU over 20 batches "
                    "(Fig. 7, Sec. 5.4), reporting about 30% additional runtime rather than "
                    "inferring time from the count."
                ),
            ),
        },
    ),
}

#: Keyed papers: id -> bibliographic record (read-only).
SUPPORTED_PAPERS: Mapping[str, PaperInfo] = MappingProxyType(_PAPERS)

#: Answer keys: id -> key (read-only); same ids as :data:`SUPPORTED_PAPERS`.
ANSWER_KEYS: Mapping[str, AnswerKey] = MappingProxyType(_KEYS)


# --------------------------------------------------------------------------- scoring


def _key_for(paper_id: object) -> AnswerKey:
    if isinstance(paper_id, str) and paper_id in ANSWER_KEYS:
        return ANSWER_KEYS[paper_id]
    supported = ", ".join(repr(p) for p in sorted(ANSWER_KEYS))
    raise ValueError(f"paper {paper_id!r} has no answer key; supported papers: {supported}")


def reference_marks(paper_id: str) -> AuditMarks:
    """The canonical marks for a keyed paper (one accepted answer per field).

    Raises:
        ValueError: ``paper_id`` is not a key of :data:`SUPPORTED_PAPERS` (the message lists them).
    """
    key = _key_for(paper_id)
    return AuditMarks(paper=paper_id, **{name: key.fields[name].canonical for name in FIELDS})


def score_audit(marks: AuditMarks | Mapping[str, object]) -> AuditScore:
    """Score the four structured marks against the paper's key.

    Args:
        marks: an :class:`AuditMarks`, or a mapping with exactly the keys ``paper`` and
            :data:`FIELDS` (string or enum values), validated as :meth:`AuditMarks.from_mapping`.

    Returns:
        An :class:`AuditScore`; each field is scored on its own (1.0 accepted, 0.0 not), so
        changing one mark changes at most that field's credit. Deterministic: the same
        marks always give an equal score with identical feedback strings.

    Raises:
        InvalidMarkError (``ValueError``): a malformed mapping or a value outside a field's
            vocabulary, naming the field and listing its allowed values.
        ValueError: the paper has no key; the message lists the supported ids.
    """
    if not isinstance(marks, AuditMarks):
        marks = AuditMarks.from_mapping(marks)
    key = _key_for(marks.paper)
    credits: dict[str, float] = {}
    feedback: dict[str, str] = {}
    for name in FIELDS:
        given = getattr(marks, name)
        field_key = key.fields[name]
        if given in field_key.accepted:
            credits[name] = 1.0
            continue
        credits[name] = 0.0
        accepted = " or ".join(repr(v) for v in field_key.accepted_in_order())
        feedback[name] = (
            f"{name}: you marked {given.value!r}; the key accepts {accepted}. "
            f"{field_key.rationale} (See {field_key.support}.)"
        )
    total = sum(credits.values()) / len(FIELDS)
    return AuditScore(
        paper=marks.paper,
        credits=MappingProxyType(credits),
        total=total,
        feedback=MappingProxyType(feedback),
    )
