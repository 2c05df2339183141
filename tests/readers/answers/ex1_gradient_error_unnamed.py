def input_gradient(x: float, y: float) -> np.ndarray:
    for value in (x, y):
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise TypeError(f"inputs must be real numbers, got {value!r}")
        if not math.isfinite(float(value)):
            raise ValueError("inputs must be finite")
    cotangents = reverse_accumulate(extended_tape(x, y))
    return np.array(cotangents[[_X, _Y]], dtype=np.float64)
