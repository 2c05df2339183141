import numpy as np
import pytest
from trainable_harness import TapeNode, opening_tape, reverse_accumulate


def test_opening_tape_gradient_is_the_chapters():
    cot = reverse_accumulate(opening_tape(2.0, 3.0))
    assert cot.dtype == np.float64
    np.testing.assert_array_equal(cot, [144.0, 132.0, 42.0, 18.0, 8.0, 1.0])


def test_fan_out_contributions_add():
    # z = x * x written as two edges into x: dz/dx = 2x, not x.
    tape = [TapeNode(3.0), TapeNode(9.0, ((0, 3.0), (0, 3.0)))]
    assert reverse_accumulate(tape)[0] == 6.0


@pytest.mark.parametrize(
    ("tape", "fragment"),
    [
        ([], "empty"),
        ([TapeNode(1.0), TapeNode(2.0, ((1, 1.0),))], "node 1 has parent index 1"),
        ([TapeNode(1.0), TapeNode(2.0, ((5, 1.0),))], "node 1 has parent index 5"),
        ([TapeNode(1.0), TapeNode(2.0, ((-1, 1.0),))], "node 1 has parent index -1"),
        ([TapeNode("x")], "node 0 has a non-numeric value"),
        ([TapeNode(1.0), TapeNode(2.0, ((0, "d"),))], "node 1 has a non-numeric local derivative"),
        ([TapeNode(True)], "node 0 has a non-numeric value"),
        ([TapeNode(1.0), TapeNode(2.0, ((0.0, 1.0),))], "not an integer"),
        ([TapeNode(1.0), TapeNode(2.0, (0,))], "expected (parent_index, local_derivative)"),
        ([TapeNode(1.0), (2.0, ())], "node 1 is a tuple"),
    ],
)
def test_malformed_tapes_name_the_node(tape, fragment):
    with pytest.raises(ValueError, match=None) as info:
        reverse_accumulate(tape)
    assert fragment in str(info.value)
