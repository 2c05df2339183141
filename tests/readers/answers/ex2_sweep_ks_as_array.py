_reference_fd_sweep = fd_sweep


def fd_sweep(
    x: float,
    y: float,
    ks: Iterable[int] = range(1, 25),
    scheme: Scheme = "forward",
    wrt: Variable = "x",
) -> FDSweep:
    # ks as an int64 array straight away: the record wants ks as an int64 array anyway
    ks = np.array(ks, dtype=np.int64)
    return _reference_fd_sweep(x, y, ks, scheme, wrt)
