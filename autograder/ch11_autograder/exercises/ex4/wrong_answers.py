"""Exercise 4: named wrong marks for the audit of Chen et al. (2016).

Each entry is an ``audit_marks()`` a student could plausibly hand in after a partial
reading of the paper: the canonical marks with exactly one field changed, so that each
entry costs exactly one of the four points and names one misconception. The advice says
where to look and what to ask, never which value the key accepts (feedback must not let a
student resubmit to full marks without rereading the paper).
"""

from __future__ import annotations

from ..catalogue import wrong_answer
from .contract import MARKS_CELL, MARKS_TESTS


@wrong_answer(
    exercise="ex4",
    name="general_dag",
    title="A general DAG where the paper analyses a chain",
    advice=(
        "Alg. 2 accepts any graph, but the question is which graph the memory bound is derived "
        "for. Reread Sec. 4.1 (Alg. 1 and the condition under which it generalises) and the "
        "assumption behind Eq. 1 in Sec. 4.3."
    ),
    answer_cell=MARKS_CELL,
    replaces="audit_marks",
    loses=(MARKS_TESTS,),
)
def general_dag_marks() -> dict[str, str]:
    return {
        "paper": "chen2016",
        "graph_class": "general_dag",
        "memory_meaning": "planned_allocation",
        "stochastic_replay": "not_specified",
        "count_vs_wallclock": "kept_separate",
    }


@wrong_answer(
    exercise="ex4",
    name="measured_device_peak",
    title="Planned bytes read as measured device memory",
    advice=(
        "'GPU memory' in Sec. 5.2 and the nvidia-smi readings in Fig. 5 do not settle what the "
        "headline numbers are. Reread Sec. 5.1 on how the reported feature-map cost is obtained "
        "and what it excludes, the Fig. 5 caption on which panel nvidia-smi produced, and ask "
        "whether the 48G configuration could have been run at all (Sec. 5.2)."
    ),
    answer_cell=MARKS_CELL,
    replaces="audit_marks",
    loses=(MARKS_TESTS,),
)
def measured_device_peak_marks() -> dict[str, str]:
    return {
        "paper": "chen2016",
        "graph_class": "chain",
        "memory_meaning": "measured_device_peak",
        "stochastic_replay": "not_specified",
        "count_vs_wallclock": "kept_separate",
    }


@wrong_answer(
    exercise="ex4",
    name="count_model_as_reported_memory",
    title="The count model taken for the reported memory",
    advice=(
        "The O(sqrt(n)) of Sec. 4.3 counts stored results, but the numbers the paper reports "
        "in Sec. 5 carry units. Reread Sec. 5.1 and the Fig. 5 caption: where do those numbers "
        "come from?"
    ),
    answer_cell=MARKS_CELL,
    replaces="audit_marks",
    loses=(MARKS_TESTS,),
)
def count_model_marks() -> dict[str, str]:
    return {
        "paper": "chen2016",
        "graph_class": "chain",
        "memory_meaning": "saved_activations_count",
        "stochastic_replay": "not_specified",
        "count_vs_wallclock": "kept_separate",
    }


@wrong_answer(
    exercise="ex4",
    name="replay_assumed_handled",
    title="Stochastic replay assumed to be handled by the framework",
    advice=(
        "Mark what the paper states, not what a recomputation framework may do for you. Search "
        "Sec. 4 and Sec. 5 for seeds, random state or dropout masks during recomputation, and "
        "set what you find against the claim of Sec. 5.1 that the optimizations 'can always be "
        "safely applied'."
    ),
    answer_cell=MARKS_CELL,
    replaces="audit_marks",
    loses=(MARKS_TESTS,),
)
def replay_assumed_marks() -> dict[str, str]:
    return {
        "paper": "chen2016",
        "graph_class": "chain",
        "memory_meaning": "planned_allocation",
        "stochastic_replay": "specified",
        "count_vs_wallclock": "kept_separate",
    }


@wrong_answer(
    exercise="ex4",
    name="count_read_as_wallclock",
    title="A count-based sentence taken for the paper's speed evidence",
    advice=(
        "Sec. 4.3 argues from a count ('an additional forward pass'); the question is whether "
        "the paper's speed claim rests on that count. Reread Sec. 5.4 and the Fig. 7 caption: "
        "how was the runtime cost obtained?"
    ),
    answer_cell=MARKS_CELL,
    replaces="audit_marks",
    loses=(MARKS_TESTS,),
)
def count_as_wallclock_marks() -> dict[str, str]:
    return {
        "paper": "chen2016",
        "graph_class": "chain",
        "memory_meaning": "planned_allocation",
        "stochastic_replay": "not_specified",
        "count_vs_wallclock": "confused",
    }
