"""The drawn memory layouts: each kind arrives as the one its contract guard names, and no other."""

from __future__ import annotations

import numpy as np
import pytest
from ch11_autograder.protocol import Laid, decode_value, encode_value
from ch11_autograder.trusted.array_layouts import LAYOUTS, distinct_layouts, laid, layout_kind
from ch11_autograder.trusted.contract import LAYOUT_KINDS, layouts


def _as_worker_passes(value):
    return decode_value(encode_value(value, request=True), request=True)


def _guards_true(array: np.ndarray) -> set[str]:
    return {kind for kind, (guard, _) in LAYOUT_KINDS.items() if eval(guard.format(a="a"), {"np": np, "a": array})}


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 1, 2), (2, 2, 2)])
def test_each_drawn_layout_meets_its_own_guard_alone(shape):
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    assert _guards_true(_as_worker_passes(values)) == set()  # C order: the plain form meets none
    for kind in distinct_layouts(shape):
        assert _guards_true(_as_worker_passes(laid(values, kind))) == {kind}, (shape, kind)


def test_layouts_without_a_distinct_form_are_not_drawn():
    assert distinct_layouts((3,)) == ("strided", "read_only")
    assert distinct_layouts((1,)) == ("read_only",)
    assert distinct_layouts((3, 1)) == ("strided", "read_only")
    assert distinct_layouts((0, 3)) == ("read_only",)
    assert distinct_layouts((2, 3)) == tuple(LAYOUTS)


def test_the_kinds_agree_with_the_contract_and_read_back():
    assert set(LAYOUTS) == set(LAYOUT_KINDS)
    values = np.arange(4).reshape(2, 2)
    for kind in LAYOUTS:
        made = laid(values, kind)
        assert isinstance(made, Laid) and layout_kind(made) == kind
    assert laid(values, None) is values
    assert [d.label for d in layouts("z0", ndim=1)] == ["layout_strided", "layout_read_only"]
    assert [d.label for d in layouts("saved", ndim=2)] == [f"layout_{k}" for k in LAYOUT_KINDS]


def test_each_mishandling_statement_fails_on_its_layout_only():
    # The statement a generated witness runs before the call: it raises on its own layout, never on C order.
    values = np.arange(6.0).reshape(2, 3)
    for drawn in layouts("a", ndim=2):
        kind = drawn.label.removeprefix("layout_")
        for other in (None, *LAYOUTS):
            a = _as_worker_passes(laid(values, other))
            try:
                exec(drawn.mishandled, {"np": np, "a": a})
            except ValueError:
                assert other == kind, (kind, other)
            else:
                assert other != kind, (kind, other)
