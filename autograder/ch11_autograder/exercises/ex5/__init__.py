"""Exercise 5: checkpointed replay of a chain with one random layer.

``contract`` (grade ids, points, shared constants), ``notebook`` (the source notebook's
cells), ``suite`` (the hidden property suites, registered on import; ``checks`` holds
them one module per graded cell) and ``wrong_answers`` (the catalogue's named wrong answers).
``strategies`` holds the suite's hypothesis strategies.
Nothing is imported here, so importing the contract stays cheap.
"""
