"""A failure's statements to paste, sorted into the calls of the student's functions and what is read back, and
the failing call worded for the page's first line (``trusted/pasted_calls.py``)."""

from __future__ import annotations

from ch11_autograder.trusted.pasted_calls import StudentCall, ordinal, read_statements, short_call

CHAIN = "chain = make_chain(16, 5, width=3, seed=11)"
Z0 = "z0 = np.array([0.3, -0.2, 0.5], dtype=np.float64)"


def test_repeated_calls_of_one_function_are_counted_as_calls():
    read = read_statements(["extended_tape(1.0, 0.75)", "extended_tape(True, 0.75)"])
    assert read.calls == (StudentCall("extended_tape", "extended_tape(1.0, 0.75)"),
                          StudentCall("extended_tape", "extended_tape(True, 0.75)"))
    assert read.subject("extended_tape") == (
        "the 2nd call of extended_tape in a sequence of 2 calls (extended_tape(True, 0.75))")


def test_names_set_up_and_read_back_are_not_calls():
    # The old first line said "call 5 of a sequence (z0)" here: five statements, one call.
    read = read_statements([CHAIN, Z0, "rng = np.random.default_rng(2)",
                            "checkpointed_cotangents(chain, z0, 4, rng, matched=True)", "rng.bit_generator.state"])
    assert [call.function for call in read.calls] == ["checkpointed_cotangents"]
    assert read.read_back == ("rng.bit_generator.state",)
    assert read.subject("checkpointed_cotangents") == (
        "what checkpointed_cotangents(chain, z0, 4, rng, matched=True) leaves in rng.bit_generator.state")
    assert read_statements(["ks = [3, 1]", "fd_sweep(x=1.0, ks=ks)", "ks"]).subject("fd_sweep") == (
        "what fd_sweep(x=1.0, ks=ks) leaves in ks")


def test_calls_of_other_functions_are_named_apart():
    read = read_statements([CHAIN, Z0, "store_all_cotangents(chain, z0, np.random.default_rng(2))",
                            "replay_report(chain, z0, 4, 2, matched=False)"])
    assert read.subject("replay_report") == (
        "replay_report(chain, z0, 4, 2, matched=False), after 1 call of store_all_cotangents")
    counter = read_statements([CHAIN, Z0, "checkpointed_cotangents(chain, z0, 4, 2)", "replay_report(chain, z0, 4, 2)",
                               "checkpointed_cotangents(chain, z0, 4, 3)", "store_all_cotangents(chain, z0, 2)",
                               "before = chain.forward_evaluations", "store_all_cotangents(chain, z0, 3)",
                               "chain.forward_evaluations - before"])
    assert counter.subject("store_all_cotangents") == (
        "what the 2nd call of store_all_cotangents (store_all_cotangents(chain, z0, 3)) leaves in "
        "chain.forward_evaluations - before, after 2 calls of checkpointed_cotangents and 1 of replay_report")


def test_a_call_read_through_an_attribute_is_a_call_and_a_long_one_is_shortened():
    long = ("checkpointed_cotangents(make_chain(16, 5, width=3, seed=11), np.array([0.3, -0.2, 0.5], "
            "dtype=np.float64), 4, rng, matched=True)")
    read = read_statements(["rng = np.random.default_rng(2)", long, f"{long}.cotangents"])
    assert [call.function for call in read.calls] == ["checkpointed_cotangents"] * 2 and read.read_back == ()
    assert read.subject("checkpointed_cotangents") == (
        "the 2nd call of checkpointed_cotangents in a sequence of 2 calls "
        "(checkpointed_cotangents(..., ..., 4, rng, matched=True).cotangents)")
    assert short_call("f(1, 2)") == "f(1, 2)"


def test_statements_that_cannot_be_read_are_not_counted():
    assert read_statements(["f(1", "f(2)"]).subject("f") == "f, in the statements below"
    assert read_statements(["x = 1", "x"]).subject("f") == "f, in the statements below"


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th"]
