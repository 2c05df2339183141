def extended_tape(x: float, y: float) -> list[TapeNode]:
    _finite_float("x", x)
    _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        TapeNode(c, ((_A, y), (_Y, a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]
