"""The checks of Exercise 3's graded cells, one module per cell (see ``ex3.suite``).

``block_length`` (``ex3_best_block_length_tests``) and ``table`` (``ex3_block_table_tests``) each hold
their cell's properties, strategies and judges; ``shared`` what both use: the catalogue entries as
misconceptions, the record's reading and the repeated-calls property.
"""
