"""The checks of Exercise 5's graded cells, one module per cell (see ``ex5.suite``).

``store_all`` (``store_all_cotangents``), ``checkpointed`` (``checkpointed_cotangents``),
``first_mismatch`` and ``report`` (``replay_report``) each hold their cell's properties and judges;
``calls`` the judges of the call contract every function shares (refusals, sequences of calls,
arguments left as they were, a chain or generator used before); ``shared`` the runs, the reference,
the misconceptions and how a judge becomes a property. The strategies are ``ex5.strategies``.
"""
