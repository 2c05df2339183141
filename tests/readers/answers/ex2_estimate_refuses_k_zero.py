def fd_estimate(x: float, y: float, k: int, scheme: Scheme = "forward", wrt: Variable = "x") -> np.float32:
    if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer, got {k!r}")
    # the step is 2**-k with k from 1 to 149
    if not 1 <= k <= _K_MAX:
        raise ValueError(f"k must be in [1, {_K_MAX}], got {k}")
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0 ** -int(k))
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = up - low
    if h_eff == 0:
        return np.float32(np.nan)
    upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
    with np.errstate(all="ignore"):
        return (opening_objective(*upper, dtype=np.float32) - opening_objective(*lower, dtype=np.float32)) / h_eff
