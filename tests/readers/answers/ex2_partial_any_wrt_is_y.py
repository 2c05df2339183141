def exact_partial(x: float, y: float, wrt: Variable = "x") -> Fraction:
    fx = _exact("x", x)
    fy = _exact("y", y)
    a = fx * fy
    b = a + fx
    c = a * fy
    b_bar = c
    c_bar = b
    a_bar = b_bar + fy * c_bar
    if wrt == "x":
        return fy * a_bar + b_bar
    return fx * a_bar + a * c_bar
