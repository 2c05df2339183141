import dataclasses


_reference_best_block_length = best_block_length


def best_block_length(depth: int) -> BlockChoice:
    choice = _reference_best_block_length(depth)
    # the record's fields are integer counts, so the square root as an integer too
    return dataclasses.replace(choice, sqrt_depth=math.isqrt(choice.depth))
