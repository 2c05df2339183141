"""Authoring: the source notebooks are generated, never edited by hand.

Each exercise's cells are declared in ``exercises/<key>/notebook.py`` (with the
:mod:`.cells` constructors); solution cells
are cut from the reference library's own source (:func:`.cells.solution_from`),
so the notebooks' solutions, the reference library and the stubs' contracts
cannot drift apart. ``python -m ch11_autograder.authoring.build`` writes
``source/ch11/*.ipynb``; ``--check`` fails if the committed files differ.
"""
