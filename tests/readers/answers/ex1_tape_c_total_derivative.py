def extended_tape(x: float, y: float) -> list[TapeNode]:
    x = _finite_float("x", x)
    y = _finite_float("y", y)
    a = x * y
    b = a + x
    c = a * y
    d = a * a
    return [
        TapeNode(x),
        TapeNode(y),
        TapeNode(a, ((_X, y), (_Y, x))),
        TapeNode(b, ((_A, 1.0), (_X, 1.0))),
        # c = x*y*y, so dc/dy = 2xy = 2a
        TapeNode(c, ((_A, y), (_Y, 2.0 * a))),
        TapeNode(d, ((_A, 2.0 * a),)),
        TapeNode(b * c + d, ((_B, c), (_C, b), (_D, 1.0))),
    ]
