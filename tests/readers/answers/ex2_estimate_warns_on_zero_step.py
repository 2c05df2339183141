def fd_estimate(x: float, y: float, k: int, scheme: Scheme = "forward", wrt: Variable = "x") -> np.float32:
    k = _check_k(k)
    scheme = _check_choice("scheme", scheme, _SCHEMES)
    wrt = _check_choice("wrt", wrt, _VARIABLES)
    xs = _to_float32("x", x)
    ys = _to_float32("y", y)
    h = np.float32(2.0**-k)
    v = xs if wrt == "x" else ys
    up = v + h
    low = v if scheme == "forward" else v - h
    h_eff = up - low
    upper, lower = ((up, ys), (low, ys)) if wrt == "x" else ((xs, up), (xs, low))
    # a zero step gives 0/0 = nan by itself, as the contract asks
    with np.errstate(over="ignore"):
        return (opening_objective(*upper, dtype=np.float32) - opening_objective(*lower, dtype=np.float32)) / h_eff
