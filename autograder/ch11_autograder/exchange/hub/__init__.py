"""The hub exchange: nbgrader's exchange kept by one service, the sender named by the hub's login, not a unix owner.

See :mod:`ch11_autograder.exchange` for its modules and what is still to come.
"""
