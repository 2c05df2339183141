"""The engine as an exercise sees it: the only modules of it an exercise imports.

Two modules, one per file of an exercise that needs the engine, split by what they cost
to import:

* :mod:`ch11_autograder.api.suite`: everything a hidden suite (``exN/suite.py``) and a
  witness table (``exN/witnesses.py``) use: properties and suites, the ``Student`` a
  check calls, the wire values, the registry's ``register``. Importing it loads
  hypothesis and the worker client.
* :mod:`ch11_autograder.api.contract`: ``Clause``, for the contract table in
  ``exN/contract.py``. It stays cheap (the registry imports every contract, and the
  grader imports the registry through ``nbgrader_config.py``), so it never imports
  ``api.suite``.

Everything else of the engine (``trusted/``, ``protocol``, ``untrusted/``) is private to
it, as hypothesis's ``internal`` is to hypothesis: an import-linter contract in
``pyproject.toml`` ("exercises-through-api") keeps the exercises out of it.
docs/authoring.md says how to write an exercise against these modules.

This package imports nothing itself, so importing ``api.contract`` costs only that module.
"""
