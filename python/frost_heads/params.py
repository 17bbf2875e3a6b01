"""frost's parameter initialisers (models/params.ts fill), so a head built here from seed S starts
from the same values as frost's model built from seed S.

Each parameter draws from its own stream, SeededRandom(seed, 'init').fork('head/NAME'): adding a
parameter never changes the others, and the order they are built in does not matter.
"""

import math

import torch

from .seeded_random import SeededRandom


def frost_init(seed: int, name: str, shape: tuple, kind: str, value: float = 0.0) -> torch.Tensor:
    """The float32 tensor frost's ParamStore(seed).variable(name, shape, {kind, value}) starts from."""
    size = math.prod(shape)
    if kind == "zeros":
        return torch.zeros(shape, dtype=torch.float32)
    if kind == "constant":
        return torch.full(shape, value, dtype=torch.float32)
    if kind != "glorot-uniform":
        raise ValueError(f"unknown initialiser '{kind}'")
    # For [in, out] matrices; vectors fall back to fan-in = fan-out = size.
    fan_in = shape[-2] if len(shape) >= 2 else size
    fan_out = shape[-1] if len(shape) >= 2 else size
    limit = math.sqrt(6 / (fan_in + fan_out))
    u = SeededRandom(seed, "init").fork(name).uniform_tensor(size)
    # frost computes (2u - 1) * limit in float64 and stores it in a Float32Array (round to nearest).
    return ((2 * u - 1) * limit).to(torch.float32).reshape(shape)
