"""Exercise 1: a third child at the shared node (fan-out).

``contract`` (grade ids, points, shared constants), ``notebook`` (the source notebook's
cells), ``suite`` (the hidden property suites, registered on import; ``checks`` holds
them one module per graded cell) and ``wrong_answers`` (the catalogue's named wrong answers).
Nothing is imported here, so importing the contract stays cheap.
"""
