def first_mismatch(saved: np.ndarray, replayed: np.ndarray) -> int | None:
    a = np.asarray(saved)
    b = np.asarray(replayed)
    # "the shapes ... differ": the rows must line up
    if a.shape != b.shape:
        raise ValueError(f"cannot compare shape {a.shape} with {b.shape}")
    if a.ndim == 0:
        raise ValueError("cotangent arrays must have at least one dimension (rows)")
    for i in range(a.shape[0] - 1, -1, -1):
        if a[i].tobytes() != b[i].tobytes():
            return i
    return None
