"""frost's output heads as torch.nn modules (PyTorch and the standard library only).

Each head is the same function as frost's head of that name, and each frozen head regenerates
frost's target matrix from the seed bit for bit, so the matrix never needs storing. See
docs/scale.md, "frost's heads in PyTorch".
"""

from .base import FrostHead
from .frozen import FixedL2Head, FixedUniformHead, HadamardHead, frozen_matrix
from .hadamard import choose_hadamard_columns, hadamard_order, hadamard_rows
from .heads import HEADS, LearnedHead, build_head
from .params import frost_init
from .seeded_random import SeededRandom, fmix32, hash_at, l2_normalise_rows, stream_key, uniform_matrix
from .shared import DrillHead, SharedCosineHead, SharedDistanceHead, SharedL2Head, SharedSqnormHead, TiedHead

__all__ = [
    "HEADS",
    "build_head",
    "frozen_matrix",
    "frost_init",
    "FrostHead",
    "LearnedHead",
    "TiedHead",
    "FixedUniformHead",
    "FixedL2Head",
    "HadamardHead",
    "SharedL2Head",
    "SharedSqnormHead",
    "SharedDistanceHead",
    "SharedCosineHead",
    "DrillHead",
    "SeededRandom",
    "fmix32",
    "hash_at",
    "stream_key",
    "uniform_matrix",
    "l2_normalise_rows",
    "hadamard_order",
    "choose_hadamard_columns",
    "hadamard_rows",
]
