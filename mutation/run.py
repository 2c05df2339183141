"""Mutation testing of the hidden suites: generate, grade, classify, write the results.

    .venv/bin/python -m mutation.run                  # every exercise; rewrites results and docs
    .venv/bin/python -m mutation.run ex3 ex5          # those exercises; the table keeps the others
    .venv/bin/python -m mutation.run ex5 --sample 10  # 10 mutants of ex5, printed, nothing written
    .venv/bin/python -m mutation.run --only ID ...    # those mutants, printed, nothing written
    .venv/bin/python -m mutation.run ex2 --operators swap_literal unwrap_call
                                                      # those operators' mutants; the others' results kept
    .venv/bin/python -m mutation.run --reclassify     # after editing equivalent.toml: no grading

``make mutation`` runs the first. For each selected exercise the unmutated submission is
graded first and must earn full points in every autograded test cell (else nothing is
written and the exit status is 2). Then every mutant (:mod:`mutation.mutants`) is graded
(:mod:`mutation.grading`) and gets a status:

* ``killed``: some autograded test cell of its notebook scored below its points (which
  cells, and whether a call ran into the grader's call time limit, are recorded); a mutant
  that ran past the pool's wall limit is ended and counted killed too, marked so;
* ``equivalent``: full points, and ``mutation/equivalent.toml`` lists it with a reason;
* ``missed``: full points and not listed: a hole in the suites;
* ``error``: grading itself failed (a bug of this tool or of the grader): exit status 1.

A listed equivalent that was killed, or that no longer exists after a full run of its
exercise, is reported as stale (exit status 1): the table must be corrected.

Full runs write ``mutation/results/<exercise>.json`` (every mutant, its status and the cells
it lost points in), ``mutation/results/summary.json`` (counts, run time, versions) and the
tables of ``docs/mutation.md`` between their markers. Progress goes to stderr; the verdict
workers' stderr to ``build/mutation/grading.log``, each graded mutant as it is known to
``build/mutation/journal.jsonl``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .grading import Graded, Pool, submission
from .mutants import OPERATOR_NAMES, Mutant, mutants_of_exercise

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
EQUIVALENT_TABLE = HERE / "equivalent.toml"
RESULTS = HERE / "results"
DOCS = REPO / "docs" / "mutation.md"
LOG = REPO / "build" / "mutation" / "grading.log"
JOURNAL = LOG.with_name("journal.jsonl")
ALL = ("ex1", "ex2", "ex3", "ex4", "ex5")


@dataclass(frozen=True)
class Equivalent:
    """One reviewed entry of ``equivalent.toml``: the mutant no input within the contract tells apart."""

    exercise: str
    id: str
    diff: str
    reason: str


def read_equivalents(path: Path = EQUIVALENT_TABLE) -> dict[str, Equivalent]:
    """id -> entry, from the reviewed table.

    Raises:
        ValueError: an entry lacks a field, has an empty reason, or repeats an id.
    """
    if not path.exists():
        return {}
    table: dict[str, Equivalent] = {}
    for raw in tomllib.loads(path.read_text()).get("equivalent", []):
        entry = Equivalent(**{k: raw[k] for k in ("exercise", "id", "diff", "reason")})
        if not entry.reason.strip():
            raise ValueError(f"{entry.id}: an equivalent needs a reason a reviewer can check")
        if entry.id in table:
            raise ValueError(f"{entry.id} is listed twice in {path.name}")
        table[entry.id] = entry
    return table


@dataclass
class Outcome:
    """A graded mutant."""

    mutant: Mutant
    status: str = ""
    lost: dict[str, str] = field(default_factory=dict)  # grade id -> "score/points", cells below full
    timed_out: bool = False
    wall_limit_hit: bool = False
    seconds: float = 0.0
    error: str = ""

    def record(self) -> dict:
        data = self.mutant.record()
        data.update(status=self.status, lost=self.lost, seconds=round(self.seconds, 1))
        if self.timed_out:
            data["call_time_limit"] = True
        if self.wall_limit_hit:
            data["wall_limit"] = True
        if self.error:
            data["error"] = self.error
        return data


def classify(graded: Graded, mutant: Mutant, equivalents: dict[str, Equivalent]) -> Outcome:
    """The status of ``mutant`` from its grading (module docstring)."""
    outcome = Outcome(mutant, seconds=graded.seconds, wall_limit_hit=graded.wall_limit_hit, error=graded.error)
    if graded.error:
        outcome.status = "error"
    elif graded.wall_limit_hit:
        outcome.status = "killed"
    else:
        outcome.lost = {g: f"{c.score:g}/{c.points:g}" for g, c in graded.cells.items() if not c.full}
        outcome.timed_out = any(c.timed_out for c in graded.cells.values())
        if outcome.lost:
            outcome.status = "killed"
        else:
            outcome.status = "equivalent" if mutant.id in equivalents else "missed"
    return outcome


def operator_of(mutant_id: str) -> str:
    """The operator named in a mutant id (``function/operator/hash``)."""
    return mutant_id.split("/")[1]


def select(exercises: Sequence[str], sample: int | None, only: Sequence[str], operators: Sequence[str] = ()
           ) -> list[Mutant]:
    """The mutants to grade: all of ``exercises``, or a deterministic sample of each, or the ids ``only``.

    ``operators`` restricts each choice to the mutants of those operators (empty: every operator).

    Raises:
        SystemExit: an id of ``only`` is not a mutant of ``exercises``.
    """
    chosen: list[Mutant] = []
    for exercise in exercises:
        mutants = mutants_of_exercise(exercise, operators)
        if only:
            mutants = [m for m in mutants if m.id in only]
        elif sample is not None:
            mutants = sorted(mutants, key=lambda m: hashlib.sha256(m.id.encode()).hexdigest())[:sample]
        chosen.extend(mutants)
    missing = set(only) - {m.id for m in chosen}
    if missing:
        raise SystemExit(f"no such mutant in {', '.join(exercises)}: {', '.join(sorted(missing))}")
    return chosen


def grade(mutants: Sequence[Mutant], *, jobs: int = 2, wall_seconds: float = 600.0,
          equivalents: dict[str, Equivalent] | None = None, progress: bool = True) -> tuple[dict, list[Outcome]]:
    """Grade the unmutated submissions, then ``mutants``.

    Returns:
        (baseline, outcomes): exercise -> {grade id: "score/points"} of the cells where the
        unmutated submission lost points (empty when it earned full points everywhere), and
        one :class:`Outcome` per mutant in the order of ``mutants``.
    """
    equivalents = read_equivalents() if equivalents is None else equivalents
    exercises = sorted({m.exercise for m in mutants})
    by_key = {m.exercise + ":" + m.id: m for m in mutants}
    LOG.parent.mkdir(parents=True, exist_ok=True)
    JOURNAL.write_text("")
    baseline: dict[str, dict[str, str]] = {}
    outcomes: dict[str, Outcome] = {}
    start = time.monotonic()

    def jobs_iter():
        for exercise in exercises:
            yield "reference:" + exercise, submission(exercise)
        for key, mutant in by_key.items():
            yield key, submission(mutant.exercise, {mutant.cell: mutant.source})

    with Pool(jobs, wall_seconds, LOG) as pool:
        for done in pool.map(jobs_iter()):
            if done.key.startswith("reference:"):
                exercise = done.key.removeprefix("reference:")
                bad = {g: f"{c.score:g}/{c.points:g}" for g, c in done.cells.items() if not c.full}
                if done.error or done.wall_limit_hit or not done.cells:
                    bad = {"<grading>": done.error or "no result"}
                baseline[exercise] = bad
                continue
            outcome = classify(done, by_key[done.key], equivalents)
            outcomes[done.key] = outcome
            with JOURNAL.open("a") as journal:  # a crash before the results are written loses no grading
                journal.write(json.dumps(outcome.record(), sort_keys=True) + "\n")
            if progress:
                lost = ", ".join(f"{g} {s}" for g, s in outcome.lost.items())
                print(f"[{len(outcomes)}/{len(by_key)} {time.monotonic() - start:.0f}s] {outcome.status:10} "
                      f"{outcome.mutant.exercise} {outcome.mutant.id} ({done.seconds:.1f}s) {lost}",
                      file=sys.stderr, flush=True)
    return baseline, [outcomes[key] for key in by_key]


def counts(records: Sequence[dict]) -> dict[str, int]:
    """mutants, killed, equivalent, missed, error, and the killed ones that needed a time limit."""
    status = [r["status"] for r in records]
    return {
        "mutants": len(records),
        "killed": status.count("killed"),
        "equivalent": status.count("equivalent"),
        "missed": status.count("missed"),
        "error": status.count("error"),
        "killed_by_time_limit": sum(1 for r in records if r.get("call_time_limit") or r.get("wall_limit")),
    }


def score(c: dict[str, int]) -> str:
    """killed / (mutants - equivalent), as a percentage."""
    denominator = c["mutants"] - c["equivalent"]
    return f"{100 * c['killed'] / denominator:.1f}%" if denominator else "n/a"


def stale_equivalents(outcomes: Sequence[Outcome], equivalents: dict[str, Equivalent], full: Sequence[str],
                      operators: Sequence[str] = ()) -> list[str]:
    """Listed equivalents that were killed, or that a full run of their exercise (and operators) no longer generates."""
    problems = [f"{o.mutant.exercise} {o.mutant.id}: listed as equivalent but killed ({o.lost or 'wall limit'})"
                for o in outcomes if o.status == "killed" and o.mutant.id in equivalents]
    generated = {o.mutant.id for o in outcomes}
    problems += [f"{e.exercise} {e.id}: listed as equivalent but no longer generated"
                 for e in equivalents.values()
                 if e.exercise in full and e.id not in generated and (not operators or operator_of(e.id) in operators)]
    return problems


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_results(outcomes: Sequence[Outcome], exercises: Sequence[str], seconds: float, jobs: int,
                  wall_seconds: float, operators: Sequence[str] = ()) -> None:
    """Rewrite results/<exercise>.json of ``exercises`` and summary.json, then the tables of docs/mutation.md.

    With ``operators``, only those operators' records are replaced; the committed records of the
    others are kept as they are.
    """
    RESULTS.mkdir(exist_ok=True)
    for exercise in exercises:
        records = [o.record() for o in outcomes if o.mutant.exercise == exercise]
        path = RESULTS / f"{exercise}.json"
        if operators and path.exists():
            kept = [r for r in json.loads(path.read_text())["mutants"] if r["operator"] not in operators]
            records = kept + records
        data = {"exercise": exercise, "counts": counts(records), "mutants": records}
        (RESULTS / f"{exercise}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    summary_path = RESULTS / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"runs": {}}
    summary["library"] = f"mutmut {importlib.metadata.version('mutmut')} and mutation/operators.py"
    selected = " ".join(exercises) + (" --operators " + " ".join(operators) if operators else "")
    summary["runs"][selected] = {
        "commit": _commit(),
        "seconds": round(seconds),
        "jobs": jobs,
        "wall_seconds_per_mutant": wall_seconds,
        "cpus": os.cpu_count(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "command": ".venv/bin/python -m mutation.run " + selected,
    }
    summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    reclassify()


def reclassify() -> list[str]:
    """Apply the current equivalent table to the committed results, without grading; rewrite them and the docs.

    A survivor is ``equivalent`` if listed, else ``missed``; killed mutants stay killed.
    Returns the stale entries (see :func:`stale_equivalents`), which are not applied.
    """
    equivalents = read_equivalents()
    stale = []
    for path in sorted(RESULTS.glob("ex*.json")):
        data = json.loads(path.read_text())
        ids = {r["id"] for r in data["mutants"]}
        for record in data["mutants"]:
            if record["status"] in ("equivalent", "missed"):
                record["status"] = "equivalent" if record["id"] in equivalents else "missed"
            elif record["status"] == "killed" and record["id"] in equivalents:
                stale.append(f"{data['exercise']} {record['id']}: listed as equivalent but killed")
        stale += [f"{e.exercise} {e.id}: listed as equivalent but not among the results"
                  for e in equivalents.values() if e.exercise == data["exercise"] and e.id not in ids]
        data["counts"] = counts(data["mutants"])
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    summary_path = RESULTS / "summary.json"
    if summary_path.exists():
        summary = json.loads(summary_path.read_text())
        summary["counts"] = {
            ex: json.loads((RESULTS / f"{ex}.json").read_text())["counts"]
            for ex in ALL
            if (RESULTS / f"{ex}.json").exists()
        }
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    write_docs()
    return stale


def _between(text: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body.rstrip()}\n{end}{tail}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def write_docs(path: Path = DOCS) -> None:
    """Regenerate the tables of ``docs/mutation.md`` from the committed results and the equivalent table."""
    results = {ex: json.loads((RESULTS / f"{ex}.json").read_text()) for ex in ALL if (RESULTS / f"{ex}.json").exists()}
    rows = ["| exercise | mutants | killed | (by a time limit) | equivalent | missed | score |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    total = dict.fromkeys(("mutants", "killed", "killed_by_time_limit", "equivalent", "missed", "error"), 0)
    for ex, data in results.items():
        c = data["counts"]
        for k in total:
            total[k] += c[k]
        rows.append(f"| {ex} | {c['mutants']} | {c['killed']} | {c['killed_by_time_limit']} | {c['equivalent']} | "
                    f"{c['missed']} | {score(c)} |")
    rows.append(f"| **all** | **{total['mutants']}** | **{total['killed']}** | {total['killed_by_time_limit']} | "
                f"**{total['equivalent']}** | **{total['missed']}** | **{score(total)}** |")
    equivalents = read_equivalents()
    eq_rows = ["| exercise | mutant | change | why no input within the contract tells it apart |", "|---|---|---|---|"]
    eq_rows += [f"| {e.exercise} | `{e.id}` | `{_cell(e.diff)}` | {_cell(e.reason)} |"
                for e in sorted(equivalents.values(), key=lambda e: (e.exercise, e.id))]
    missed = ["| exercise | cell | mutant | change |", "|---|---|---|---|"]
    missed += [f"| {ex} | `{r['cell']}` | `{r['id']}` | `{_cell(r['diff'])}` |"
               for ex, data in results.items() for r in data["mutants"] if r["status"] == "missed"]
    text = path.read_text()
    text = _between(text, "mutation-table", "\n".join(rows))
    text = _between(text, "mutation-equivalent", "\n".join(eq_rows))
    text = _between(text, "mutation-missed", "\n".join(missed))
    path.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exercises", nargs="*", help="exercise keys (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="grading processes (default 2)")
    parser.add_argument("--wall", type=float, default=600.0, help="wall seconds per mutant (default 600)")
    parser.add_argument("--sample", type=int, help="grade this many mutants per exercise; write nothing")
    parser.add_argument("--only", nargs="+", default=[], metavar="ID", help="grade these mutants; write nothing")
    parser.add_argument("--operators", nargs="+", default=[], metavar="NAME", choices=OPERATOR_NAMES,
                        help="only these operators' mutants; a full run keeps the other operators' results")
    parser.add_argument("--reclassify", action="store_true",
                        help="grade nothing: apply equivalent.toml to the committed results, rewrite them and the docs")
    args = parser.parse_args(argv)
    if args.reclassify:
        stale = reclassify()
        for problem in stale:
            print(f"STALE: {problem}")
        return 1 if stale else 0
    exercises = args.exercises or list(ALL)
    unknown = set(exercises) - set(ALL)
    if unknown:
        parser.error(f"unknown exercises: {sorted(unknown)}")
    full = args.sample is None and not args.only
    started = time.monotonic()
    mutants = select(exercises, args.sample, args.only, args.operators)
    equivalents = read_equivalents()
    baseline, outcomes = grade(mutants, jobs=args.jobs, wall_seconds=args.wall, equivalents=equivalents)
    seconds = time.monotonic() - started
    broken = {ex: bad for ex, bad in baseline.items() if bad}
    if broken:
        print(f"the unmutated submissions lose points, nothing written: {broken}", file=sys.stderr)
        return 2
    for o in outcomes:
        if o.status in ("missed", "error"):
            print(f"{o.status.upper()}: {o.mutant.exercise} {o.mutant.cell} {o.mutant.id}: {o.mutant.diff}"
                  + (f"\n{o.error}" if o.error else ""))
    records = [o.record() for o in outcomes]
    for ex in exercises:
        c = counts([r for r in records if r["exercise"] == ex])
        print(f"{ex}: {c['mutants']} mutants, {c['killed']} killed ({c['killed_by_time_limit']} by a time limit), "
              f"{c['equivalent']} equivalent, {c['missed']} missed, {c['error']} errors; score {score(c)}")
    print(f"{len(outcomes)} mutants graded in {seconds:.0f} s with {args.jobs} processes")
    stale = stale_equivalents(outcomes, equivalents, exercises if full else (), args.operators)
    for problem in stale:
        print(f"STALE: {problem}")
    if full:
        write_results(outcomes, exercises, seconds, args.jobs, args.wall, args.operators)
    return 1 if stale or any(o.status == "error" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
