"""A chain of primitives with one stateful random operation (Exercise 5).

Layer ``i`` maps state ``z_i`` (a float64 vector of length ``width``) to

    z_{i+1} = tanh(w_i * z_i + b_i)                     (deterministic layers)
    z_{i+1} = tanh(w_r * z_r + b_r + s * eps),  eps ~ N(0, I)   (layer r)

where ``eps`` is drawn from the numpy ``Generator`` passed to
:meth:`StochasticChain.forward`. The loss is ``L = sum(z_depth)``.

Every layer's reverse rule reads only its *output*:
``dL/dz_i = w_i * (1 - z_{i+1}**2) * dL/dz_{i+1}``. So reverse accumulation
needs the primal states ``z_1 .. z_depth``, and replaying the random layer
with another random stream silently changes the states that later rules read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["StateLedger", "StochasticChain", "make_chain"]


@dataclass
class StateLedger:
    """Counts primal states alive at once, in units of one ``z_i`` vector.

    Call :meth:`retain` when a state is kept and :meth:`release` when it is
    dropped; ``peak`` is the largest ``live`` count seen.

    Raises:
        ValueError: releasing more states than are alive, or a count < 1.
    """

    live: int = 0
    peak: int = 0

    def retain(self, count: int = 1) -> None:
        if count < 1:
            raise ValueError(f"retain count must be >= 1, got {count}")
        self.live += count
        self.peak = max(self.peak, self.live)

    def release(self, count: int = 1) -> None:
        if count < 1:
            raise ValueError(f"release count must be >= 1, got {count}")
        if count > self.live:
            raise ValueError(f"cannot release {count} states: only {self.live} alive")
        self.live -= count


@dataclass
class StochasticChain:
    """A depth-``len(weights)`` chain whose layer ``random_layer`` draws noise.

    Attributes:
        weights, biases: per-layer scalars, float64, equal lengths.
        random_layer: index of the one stochastic layer, ``0 <= r < depth``.
        noise_scale: ``s`` above.
        width: length of every state vector.
        forward_evaluations: layers applied by :meth:`forward` since
            construction or :meth:`reset_counters`; replays count too.
    """

    weights: tuple[float, ...]
    biases: tuple[float, ...]
    random_layer: int
    noise_scale: float = 0.5
    width: int = 4
    forward_evaluations: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        self.weights = tuple(float(w) for w in self.weights)
        self.biases = tuple(float(b) for b in self.biases)
        if len(self.weights) == 0 or len(self.weights) != len(self.biases):
            raise ValueError("weights and biases must be non-empty and of equal length")
        if not 0 <= self.random_layer < len(self.weights):
            raise ValueError(f"random_layer must be in [0, {len(self.weights)}), got {self.random_layer}")
        if self.width < 1:
            raise ValueError(f"width must be >= 1, got {self.width}")

    @property
    def depth(self) -> int:
        """Number of layers ``L``; states are ``z_0 .. z_L``."""
        return len(self.weights)

    def reset_counters(self) -> None:
        self.forward_evaluations = 0

    def _check(self, layer: int, vector: np.ndarray, name: str) -> np.ndarray:
        if not 0 <= layer < self.depth:
            raise ValueError(f"layer must be in [0, {self.depth}), got {layer}")
        array = np.asarray(vector)
        if array.shape != (self.width,) or array.dtype != np.float64:
            raise ValueError(
                f"{name} must be a float64 vector of shape ({self.width},), got {array.dtype} {array.shape}"
            )
        return array

    def forward(self, layer: int, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Apply layer ``layer`` to ``z``; draws ``width`` normals from ``rng`` at the random layer only."""
        z = self._check(layer, z, "z")
        self.forward_evaluations += 1
        pre = self.weights[layer] * z + self.biases[layer]
        if layer == self.random_layer:
            pre = pre + self.noise_scale * rng.standard_normal(self.width)
        return np.tanh(pre)

    def backward(self, layer: int, z_out: np.ndarray, cotangent_out: np.ndarray) -> np.ndarray:
        """Reverse rule of layer ``layer``: ``w * (1 - z_out**2) * cotangent_out``."""
        z_out = self._check(layer, z_out, "z_out")
        cotangent_out = self._check(layer, cotangent_out, "cotangent_out")
        return self.weights[layer] * (1.0 - z_out * z_out) * cotangent_out

    def loss(self, z_last: np.ndarray) -> float:
        """``L = sum(z_depth)``; its cotangent with respect to ``z_depth`` is all ones."""
        return float(np.sum(z_last))


def make_chain(
    depth: int, random_layer: int, *, width: int = 4, noise_scale: float = 0.5, seed: int = 11
) -> StochasticChain:
    """A chain with weights in [0.6, 1.4) and biases in [-0.3, 0.3) drawn from ``seed``.

    The parameters come from their own generator; the noise of the random layer
    comes from whatever generator is passed to :meth:`StochasticChain.forward`.
    """
    params = np.random.default_rng(seed)
    return StochasticChain(
        weights=tuple(params.uniform(0.6, 1.4, size=depth)),
        biases=tuple(params.uniform(-0.3, 0.3, size=depth)),
        random_layer=random_layer,
        noise_scale=noise_scale,
        width=width,
    )
