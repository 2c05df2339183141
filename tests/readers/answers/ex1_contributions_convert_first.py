def contributions_into_a(x: float, y: float) -> np.ndarray:
    # "each is used as its float64 value float(x)": convert first, then check
    x, y = float(x), float(y)
    tape = extended_tape(x, y)
    cotangents = reverse_accumulate(tape)
    contributions = np.zeros(len(_CHILDREN_OF_A), dtype=np.float64)
    for slot, child in enumerate(_CHILDREN_OF_A):
        for parent, local in tape[child].parents:
            if parent == _A:
                contributions[slot] += cotangents[child] * np.float64(local)
    return contributions
