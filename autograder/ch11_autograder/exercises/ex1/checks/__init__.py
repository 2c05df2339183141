"""The checks of Exercise 1's graded cells, one module per cell (see ``ex1.suite``).

``tape`` (``ex1_extended_tape_tests``), ``contributions`` (``ex1_contributions_into_a_tests``) and
``gradient`` (``ex1_input_gradient_tests``) each hold their cell's properties, strategies and judges;
``clauses`` the contract properties every function of the exercise has (bad inputs, number types,
repeated calls); ``shared`` the tolerances, points and vector helpers more than one cell uses.
"""
