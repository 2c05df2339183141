"""Shared pieces of the benchmarks: machine facts, load and CPU accounting, courses, timing files.

Nothing here asserts anything about speed: the benchmarks measure and
report. All times are wall-clock seconds unless a name says otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ch11_autograder.nbgrader_cli import run_nbgrader
from ch11_autograder.paths import ASSIGNMENT, COURSE_CONFIG, REPO_ROOT, SOURCE_DIR

BENCH = REPO_ROOT / "bench"
RESULTS = BENCH / "results"
TIMINGS_ENV = "CH11_BENCH_TIMINGS"
CPU_ENV = "CH11_BENCH_CPUACCT"
#: The source trees ``make bytecode`` compiles (Makefile).
BYTECODE_DIRS = ("autograder/ch11_autograder", "harness/src", "solutions")


#: Appended to a benchmark course's nbgrader_config.py: inert unless $CH11_BENCH_TIMINGS is set.
TIMING_FOOTER = f"""
# --- benchmark timing (bench/pipeline_timing.py): only wraps timers, inert without ${TIMINGS_ENV}
import sys as _bench_sys
_bench_sys.path.insert(0, {str(BENCH)!r})
import pipeline_timing as _bench_timing
_bench_timing.install()
"""

#: A plain nbgrader course: the same layout, every other setting nbgrader's default
#: (Execute in the student's kernel, tests judged there, default feedback).
PLAIN_CONFIG = """\"\"\"Plain nbgrader course for the benchmarks: nbgrader's defaults, the course's layout only.\"\"\"
c = get_config()  # noqa: F821
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "assignments"
"""

#: The cheap configuration of the memory benchmark: no notebook execution for outputs.
#: The pipeline as it was before the zygote: a new interpreter for every runner, kernel and worker.
NOFORK = """
# --- benchmark only: no zygote
c.SandboxedExecute.fork_from_zygote = False
c.TrustedVerdicts.fork_from_zygote = False
"""

NOEXEC = """
# --- benchmark (memory) only: skip executing notebooks for their outputs
c.Autograde.autograde_preprocessors = [
    p for p in c.Autograde.autograde_preprocessors if p is not SandboxedExecute
]
"""


# --------------------------------------------------------------------------- machine and load


def load() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def _busy_seconds() -> float:
    """CPU seconds all CPUs spent busy since boot (user, nice, system, irq, softirq, steal)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in fields]
    busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + (ticks[7] if len(ticks) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


CPUACCT = Path("/sys/fs/cgroup/cpuacct")
_account: dict[str, Path | None] = {"group": None}


def account_own_cpu() -> str:
    """Put this process (and so everything it starts) into a cpuacct cgroup of its own.

    Sandboxed processes end with SIGKILL to their whole tree, so nobody reaps
    them and ``getrusage(RUSAGE_CHILDREN)`` never sees their CPU time; the
    cgroup counts it. Returns the method used: ``"cpuacct-cgroup"``, or
    ``"rusage"`` when the cgroup cannot be made here (then sandboxed CPU is
    undercounted and "other processes" overcounted). Undo with :func:`release_own_cpu`.
    """
    group = CPUACCT / f"ch11-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    except OSError:
        if group.is_dir():
            with contextlib.suppress(OSError):
                group.rmdir()
        return "rusage"
    _account["group"] = group
    os.environ[CPU_ENV] = "1"  # nbgrader processes then account themselves (bench/pipeline_timing.py)
    return "cpuacct-cgroup"


def release_own_cpu() -> None:
    group = _account["group"]
    if group is None:
        return
    _account["group"] = None
    os.environ.pop(CPU_ENV, None)
    with contextlib.suppress(OSError):
        (CPUACCT / "cgroup.procs").write_text(f"{os.getpid()}\n")
    for _ in range(50):  # per-process groups left while a descendant was still exiting
        try:
            for child in group.iterdir():
                if child.is_dir():
                    child.rmdir()
            group.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def _own_cpu_seconds() -> float:
    """CPU seconds of this process and its descendants (see :func:`account_own_cpu`)."""
    group = _account["group"]
    if group is not None:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class Conditions:
    """The machine around one measurement.

    Attributes:
        load_before, load_after: ``os.getloadavg()`` at start and end.
        wall_seconds: the measurement's wall time.
        own_cpu_seconds: CPU used by this process and the processes it reaped.
        foreign_cpu_seconds: CPU every other process used meanwhile (machine
            busy time minus ours), the noise indicator; ``foreign_cores`` is
            that divided by the wall time (0 = machine otherwise idle, 2 = two
            other cores' worth of work on this 2-core machine).
    """

    load_before: list[float]
    load_after: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0
    own_cpu_seconds: float = 0.0
    foreign_cpu_seconds: float = 0.0
    foreign_cores: float = 0.0


class Measure:
    """Context manager recording :class:`Conditions` around a block (``m.conditions`` afterwards)."""

    def __enter__(self) -> Measure:
        self.conditions = Conditions(load())
        self._busy = _busy_seconds()
        self._own = _own_cpu_seconds()
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        c = self.conditions
        c.wall_seconds = round(time.perf_counter() - self._t, 3)
        c.load_after = load()
        c.own_cpu_seconds = round(_own_cpu_seconds() - self._own, 2)
        c.foreign_cpu_seconds = round(max(0.0, _busy_seconds() - self._busy - c.own_cpu_seconds), 2)
        c.foreign_cores = round(c.foreign_cpu_seconds / c.wall_seconds, 2) if c.wall_seconds else 0.0


def machine() -> dict[str, Any]:
    """nproc, CPU model, memory, kernel, Python, git commit, load at start."""
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT, capture_output=True,
                           text=True).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "mem_gib": round(mem_kib / 1024**2, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "commit": commit + (" (uncommitted changes in tracked files)" if dirty else ""),
        "load_at_start": load(),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
    }


# --------------------------------------------------------------------------- statistics


def median(values: Iterable[float]) -> float:
    values = list(values)
    return round(statistics.median(values), 3) if values else float("nan")


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the max/min ratio (how noisy repeated runs were)."""
    vals = list(values)
    if not vals:
        return {}
    return {"median": median(vals), "min": round(min(vals), 3), "max": round(max(vals), 3),
            "max_over_min": round(max(vals) / min(vals), 2) if min(vals) > 0 else float("nan"), "n": len(vals)}


def ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else float("nan")


# --------------------------------------------------------------------------- courses


def compile_sources(tree: Path) -> None:
    """Compile the package's sources in ``tree`` (a checkout) to bytecode, as ``make bytecode`` does.

    pip compiles what it installs, not an editable install's sources; where
    ``PYTHONDONTWRITEBYTECODE`` is set every grading process would compile them again, which
    plain nbgrader (compiled at install) never does. Incremental, so cheap when done.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(tree / d) for d in BYTECODE_DIRS)],
                   check=True, capture_output=True)


def make_course_template(root: Path, kind: str, *, config_file: Path | None = None, name: str | None = None) -> Path:
    """A course directory with the assignment generated once (copied for every run).

    ``kind`` is ``"pipeline"`` (the repository's nbgrader_config.py),
    ``"pipeline-noexec"`` (the same without ``SandboxedExecute``: notebooks are
    not executed for their outputs; verdicts, grades and feedback as usual),
    ``"pipeline-nofork"`` (the same without the per-submission zygote) or
    ``"plain"`` (:data:`PLAIN_CONFIG`); each gets :data:`TIMING_FOOTER` and the
    repository's ``source/ch11``. ``config_file`` replaces the repository's nbgrader_config.py
    (another commit's); ``name`` the directory's ``template-<kind>``.
    """
    if kind != "plain":
        compile_sources(config_file.parent if config_file is not None else REPO_ROOT)
    course = root / (name or f"template-{kind}")
    if course.exists():
        shutil.rmtree(course)
    (course / "source").mkdir(parents=True)
    shutil.copytree(SOURCE_DIR, course / "source" / ASSIGNMENT)
    config = PLAIN_CONFIG if kind == "plain" else (config_file or COURSE_CONFIG).read_text()
    if kind == "pipeline-noexec":
        config += NOEXEC
    if kind == "pipeline-nofork":
        config += NOFORK
    (course / "nbgrader_config.py").write_text(config + TIMING_FOOTER)
    done = run_nbgrader(course, "generate_assignment", ASSIGNMENT, "--force", capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"generate_assignment failed for the {kind} template:\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    return course


def fresh_copy(template: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(template, dest, symlinks=True)
    return dest


def students(class_dir: Path) -> list[str]:
    return sorted(p.name for p in class_dir.iterdir() if p.is_dir())


# --------------------------------------------------------------------------- timing files


def read_timings(directory: Path) -> list[dict[str, Any]]:
    """Every process record ``pipeline_timing`` wrote into ``directory``."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def process_kind(record: dict[str, Any]) -> tuple[str, str]:
    """(nbgrader subcommand, student or "") of a timing record."""
    argv = record.get("argv", [])
    command = next((a for a in argv[1:] if not a.startswith("-")), "")
    student = next((a.split("=", 1)[1] for a in argv if a.startswith("--student=")), "")
    return command, student


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=_default) + "\n")


def _default(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(type(value).__name__)
