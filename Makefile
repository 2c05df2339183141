# Two commands matter on a fresh machine:
#   make demo   grade the bundled demo class and print the grade table
#   make test   lint and run the whole test suite (what .ci/run calls)
# Both create .venv and install the pinned requirements first.

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test test-fast test-slurm test-dask test-page test-page-hub test-page-hub-trixie test-readers docker-engine browser hub slurm lint demo example wheel release clean bytecode

$(STAMP): requirements/lock.txt pyproject.toml harness/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements/lock.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e harness -e .
	touch $@

# pip compiles the packages it installs, but not the sources of an editable install (ours). Where
# PYTHONDONTWRITEBYTECODE is set, as on these machines, every process that imports the grader would
# compile it again: about 0.1 s of the start of each nbgrader a batch runs (bench/README.md, "One
# student's wait: the suites preloaded, the package compiled, the kernel reached sooner").
# Incremental: a stale file is recompiled, the rest kept.
bytecode: $(STAMP)
	$(PY) -m compileall -q autograder/ch11_autograder harness/src solutions

# Style (ruff), the package's layering (import-linter: the contracts in pyproject.toml's
# [tool.importlinter]) and types (mypy: [tool.mypy]). Both checkers keep caches in the
# work tree (.import_linter_cache, .grimp_cache, .mypy_cache), so reruns take seconds.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo
	$(VENV)/bin/mypy

# Every tier (see tests/conftest.py), with a Docker engine (installed and started
# first when missing and this runs as root: .ci/docker-engine.sh), Debian's
# Chromium for the browser and hub tiers (installed when missing: .ci/browser.sh) and Debian's
# configurable-http-proxy for the hub tier (.ci/hub.sh). The dask, slurm, page and readers tiers are
# opt-in (`make test-dask`, `make test-slurm`, `make test-page`, `make test-readers`): they keep CI under 60 minutes.
# Three tracks at once (.ci/lanes.py): the hub tier then the batch tests; the serve/behaviour/exchange/
# hostile/readers tiers; the rest. Each lane's wall and CPU seconds are printed when it ends.
test: lint bytecode docker-engine browser hub
	$(PY) .ci/lanes.py -m "not slurm and not dask and not page and not readers"

# While developing: everything but the Docker image, the hostile-corpus batches, the
# batch grader's whole-class runs, the exchange tier's course loop with unix users, the
# hub tier, the page's install steps on fresh Debian containers and the Dask cluster and Slurm.
test-fast: lint bytecode
	$(PY) -m pytest -m "not docker and not hostile_batch and not class_batch and not exchange and not hub and not page and not dask and not slurm and not readers"

# Opt-in (not in `test` or CI): the demo class graded on a one-node Slurm cluster that the test
# starts (tests/slurm/), with Debian's slurm-wlm and munge (installed when missing: .ci/slurm.sh).
# Time and load: docs/batch.md ("Tests and their time").
test-slurm: $(STAMP) slurm
	$(PY) -m pytest -m slurm -rP tests/slurm

# Opt-in (not in `test` or CI): the readers' corpus graded whole, all twenty wrong answers (tests/readers/;
# `make test` grades the first answer of each exercise). About 4 minutes more on an idle 2-core machine.
test-readers: $(STAMP)
	$(PY) -m pytest -m readers -rP tests/readers

# Opt-in (not in `test` or CI): grading on a real Dask scheduler and two workers on 127.0.0.1
# (tests/autograder/batch/test_cluster.py, about 5 minutes on an idle machine). The fast tests
# of --cluster (addresses, TLS warning, configuration) stay in `test`. docs/batch.md.
test-dask: $(STAMP)
	$(PY) -m pytest -m dask -rP tests/autograder/batch

# Opt-in (not in `test` or CI): docs/course.md's install steps run as written in fresh Debian 12
# and Debian 13 containers, then the behaviour fixtures under each one's Python (tests/page/;
# root and a Docker engine; about 50 minutes per Debian version on a loaded 2-core machine:
# docs/course.md, "The page's install steps on fresh Debian"), and the page's hub path on each (below).
# The page runner's own tests
# (tests/page/test_page_runner.py, a toy page in local bash) stay in `test`.
test-page: $(STAMP) docker-engine
	$(PY) -m pytest -m page -rP tests/page

# The page's hub path alone on Debian 12, and the two wrong steps planted on it (docs/course.md, "The page's
# hub path on a fresh Debian"): the installed machine is cached as a local image keyed on the install steps
# (the first run installs).
test-page-hub: $(STAMP) docker-engine browser
	$(PY) -m pytest -m page -rP tests/page/test_hub_term.py -k "not trixie"

# The same hub path on Debian 13 (trixie, Python 3.13), its installed machine an image of its own: 36 minutes
# at a load average of 15 when it installs (the install 22 minutes, the image's commit about 6, then the path
# itself 7, which is what a rerun from the cached image repeats). docs/course.md, "The page's hub path on a
# fresh Debian".
test-page-hub-trixie: $(STAMP) docker-engine browser
	$(PY) -m pytest -m page -rP tests/page/test_hub_term.py -k trixie

docker-engine:
	bash .ci/docker-engine.sh

browser:
	bash .ci/browser.sh

hub:
	bash .ci/hub.sh

slurm:
	bash .ci/slurm.sh

example: $(STAMP)
	$(PY) examples/chapter_listings.py --out build/chapter

wheel: $(STAMP)
	$(PY) harness/build_wheel.py --out dist --check

demo: bytecode
	$(PY) -m ch11_autograder.demo

# Regenerate everything derived from the exercise definitions and the reference:
# source notebooks, the released notebooks (by nbgrader itself) and the demo class.
release: $(STAMP)
	$(PY) -m ch11_autograder.authoring.build
	$(PY) -m ch11_autograder.authoring.release
	$(PY) -m ch11_autograder.demo build
	$(PY) -m ch11_autograder.authoring.points --write
	$(PY) -m ch11_autograder.authoring.kill_table

clean:
	rm -rf $(VENV) build dist .pytest_cache .hypothesis .mypy_cache .import_linter_cache .grimp_cache

# Cost benchmarks (not part of `test` or CI): parts a-c 6 minutes on an idle 2-core machine, part d 16.
# Method and results: bench/README.md; numbers land in bench/results/.
.PHONY: bench
bench: bytecode
	$(PY) bench/run.py

# The hub exchange service under a class of 300 submitting within 5 minutes (not part of `test` or CI: about
# 8 minutes; a stand-in for the hub's REST API, no hub). Method and results: bench/README.md ("The hub
# exchange service under a class"); numbers land in bench/results/hub_exchange_load.json.
.PHONY: bench-hub-load
bench-hub-load: bytecode
	$(PY) bench/hub_exchange_load.py

# Mutation testing of the hidden suites (not part of `test` or CI: it grades about 900 mutants,
# see docs/mutation.md for the measured time). Rewrites mutation/results/ and the tables of
# docs/mutation.md; `$(PY) -m mutation.run ex3` reruns one exercise.
.PHONY: mutation
mutation: $(STAMP)
	$(PY) -m mutation.run
