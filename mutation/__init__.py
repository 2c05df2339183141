"""Mutation testing of the hidden suites: how many single-site changes of the reference answers lose points.

Not part of the shipped ``ch11_autograder`` package: it mutates the solution regions of the
source notebooks (:mod:`mutation.mutants`, with mutmut's operators), grades each mutant as the
grader does (:mod:`mutation.grading`) and writes the committed results (:mod:`mutation.run`).
docs/mutation.md says how to run it and what the numbers are.
"""
