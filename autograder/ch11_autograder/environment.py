"""Every ``CH11_*`` environment variable, with its meaning, its default and who reads and sets it.

:data:`VARIABLES` lists the package's own: each is read somewhere under ``ch11_autograder/``, and
``tests/autograder/test_environment.py`` checks both ways (every ``CH11_`` name the package
spells is listed here, and the modules that read each one, found in their source, are its
:attr:`EnvVar.read_by`). :data:`DEVELOPMENT` lists those only the benchmarks and the tests
read (the same test checks that each still appears in its readers).

The variables keep their names where they are read (``SANDBOX_ENV`` in ``untrusted/launch.py``, ...):
the sandbox runtime (``untrusted/runtime/``) imports nothing of the package, so it cannot import
them from here. This list is documentation, checked against the code; nothing reads it at run time.
docs/architecture.md ("Environment variables") points here.

This module imports nothing of the package (a contract in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEVELOPMENT", "VARIABLES", "EnvVar"]


@dataclass(frozen=True)
class EnvVar:
    """One ``CH11_*`` environment variable.

    Attributes:
        name: the variable.
        meaning: what its value says.
        default: what holds when it is unset (or blank).
        read_by: the files that read it from the environment, relative to the package
            (``untrusted/choose.py``) or, in :data:`DEVELOPMENT`, to the repository.
        set_by: who sets it for another process, if anyone (the package's modules and scripts, the image).
    """

    name: str
    meaning: str
    default: str
    read_by: tuple[str, ...]
    set_by: str = ""


#: The package's variables, sorted by name.
VARIABLES: tuple[EnvVar, ...] = (
    EnvVar("CH11_BWRAP", "path of the bubblewrap binary the bwrap backend runs",
           "the binary bundled in the venv (requirements), else bwrap on PATH",
           ("untrusted/backends/bwrap.py",), "the administrator"),
    EnvVar("CH11_CGROUP_PARENT", "a prepared cgroup v2 directory holding no processes, pids and memory enabled "
           "for its children, under which the bwrap backend makes its runs' cgroups",
           "below this process's own cgroup, when that can hold them",
           ("untrusted/backends/cgroups.py",), "the administrator"),
    EnvVar("CH11_EXCHANGE_URL", "URL of the hub exchange service (``<hub>/services/<name>/``) the hub exchange's "
           "nbgrader plug-in calls with the user's JUPYTERHUB_API_TOKEN", "unset: c.HubExchange.service_url, else "
           "every exchange command stops naming both (and ch11-serve with c.ServePolicy.exchange = \"hub\")",
           ("exchange/hub/plugin.py", "serve/policy.py"),
           "the hub's Spawner.environment (docs/course.md, \"Exchange through the hub\")"),
    EnvVar("CH11_EXECUTION_REPORT", "file where an nbgrader run writes how much of each submission's "
           "notebook-execution budget it used (JSON, trusted/budget.py)", "unset: nothing is written",
           ("trusted/budget.py",), "batch/isolated.py, for each isolated nbgrader run"),
    EnvVar("CH11_EXERCISES", "dotted package of the exercise registry a course grades (its EXERCISES, made by "
           "exercises.registry()): nbgrader_config.py takes the suite modules and worker-skipped cells from it; one "
           "that cannot be imported stops every nbgrader command; the sandbox hides its top-level package, and "
           "--docker refuses it", "unset or blank: the chapter's exercises",
           ("exercises/__init__.py", "untrusted/launch.py", "batch/docker.py"),
           "the administrator of a course other than the chapter's (docs/authoring.md)"),
    EnvVar("CH11_FONT_LIST", "a saved matplotlib font list every sandboxed run starts with",
           "unset: each run builds its own", ("untrusted/choose.py",),
           "batch/fonts.py (built once per batch process), through batch/isolated.py"),
    EnvVar("CH11_FORK_KERNEL", "internal, ``1``: to a submission's zygote, that its notebook runs fork their "
           "kernels; to such a run, that it forks its kernel from itself instead of starting an interpreter",
           "unset: kernels start afresh",
           ("untrusted/runtime/execute_notebook.py", "untrusted/runtime/zygote.py"),
           "untrusted/forkserver.py (the zygote), untrusted/runtime/zygote.py (its forks)"),
    EnvVar("CH11_RUNTIME_DIR", "host directory of the sandbox runtime scripts for the container-user backend",
           "the package's untrusted/runtime/ (launch.RUNTIME_DIR)", ("untrusted/backends/container_user.py",),
           "the grading image (autograder/Dockerfile), gradescope/setup.sh and gradescope/run_autograder"),
    EnvVar("CH11_RUN_PHASES", "``1``: a notebook run prints its phases' timings on stderr (a benchmark's "
           "switch); removed once read", "unset: no timings", ("untrusted/runtime/execute_notebook.py",),
           "bench/notebook_run_phases.py"),
    EnvVar("CH11_SANDBOX", "the sandbox backend for student code: bwrap, container-user or none "
           "(a ``sandbox`` trait or ``--sandbox`` option, when given, wins)", "bwrap", ("untrusted/choose.py",),
           "batch/isolated.py (each isolated run: the batch's backend), batch/docker.py, the grading image, "
           "gradescope/setup.sh and gradescope/run_autograder (container-user)"),
    EnvVar("CH11_SCRATCH_ROOT", "a root whose ``slot<N>`` folder is slot N's own size-capped scratch "
           "(each isolated nbgrader run's TMPDIR)", "unset: the system's temporary directory",
           ("batch/isolated.py",), "batch/docker.py (a tmpfs per slot in the container)"),
    EnvVar("CH11_SLOT", "this process's grading slot, 0..7 (the container-user backend's uid, the scratch "
           "folder)", "0", ("untrusted/choose.py",), "batch/isolated.py, one per worker"),
    EnvVar("CH11_VERDICT_CACHE", "absolute directory of the verdict cache (``c.VerdictCache.directory``, "
           "when set, wins)", "unset or blank: no cache", ("trusted/verdict_cache.py",),
           "the instructor; batch/isolated.py passes it on made absolute; serve/service.py sets it "
           "to the practice course's when unset"),
    EnvVar("CH11_WORKER_COURSE", "on a Dask worker: the nbgrader course directory it grades with",
           "the checkout the package runs from", ("batch/jobs.py",), "whoever starts the worker"),
    EnvVar("CH11_WORKER_FORK_NBGRADER", "on a Dask worker: ``0`` starts each job's nbgrader afresh instead "
           "of forking the slot's pre-imported one", "forks", ("batch/jobs.py",), "whoever starts the worker"),
)

#: Read only by the benchmarks and the tests (paths relative to the repository), sorted by name.
DEVELOPMENT: tuple[EnvVar, ...] = (
    EnvVar("CH11_BENCH_CPUACCT", "``1``: a timed nbgrader process records its CPU time (bench/README.md)",
           "unset: ``cpu_seconds`` is None", ("bench/common.py", "bench/pipeline_timing.py"),
           "the benchmarks"),
    EnvVar("CH11_BENCH_TIMINGS", "directory where a benchmark course's nbgrader runs write their timings",
           "unset: the timing footer is inert", ("bench/common.py", "bench/pipeline_timing.py"),
           "the benchmarks"),
    EnvVar("CH11_CHAPTER_TEXT", "the chapter's plain-text file, to compare the listings with it directly",
           "unset: compared with the recorded digests", ("tests/examples/test_chapter_listings.py",)),
    EnvVar("CH11_CHROMIUM", "the browser tier's Chromium binary", "chromium on PATH",
           ("tests/support/browser.py",)),
    EnvVar("CH11_EXCHANGE_VENVS", "where the exchange tier keeps its per-user venvs between runs",
           "/var/tmp/ch11-exchange-venvs", ("tests/support/course_users.py",)),
    EnvVar("CH11_HOSTILE_CASES", "``name,...``: the hostile tier grades only these cases", "every case",
           ("tests/hostile/test_hostile.py",)),
    EnvVar("CH11_HOSTILE_OBSERVED", "path (``{backend}`` replaced) where the hostile tier writes the observed "
           "outcomes (docs/hostile.md)", "unset: not written", ("tests/hostile/test_hostile.py",)),
)
