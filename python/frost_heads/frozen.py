"""The frozen heads: fixed-uniform, fixed-l2 and hadamard (models/heads/fixed-*.ts, hadamard.ts).

Their target matrix is regenerated from the seed, bit for bit equal to frost's, so it is a
non-persistent buffer: a checkpoint never stores it and the optimiser never sees it.
"""

import math

import torch

from .base import FrostHead
from .hadamard import choose_hadamard_columns, hadamard_order, hadamard_rows
from .seeded_random import l2_normalise_rows, stream_key, uniform_matrix


def frozen_matrix(name: str, seed: int, vocab_size: int, dim: int, **options) -> torch.Tensor:
    """The float32 [|V|, d] target matrix of frozen head `name`, as frost's head builds it (row j: word j)."""
    if name == "fixed-uniform":
        limit = options.get("limit", 10)
        return uniform_matrix(stream_key(seed, "fixed-uniform"), vocab_size, dim, -limit, limit)
    if name == "fixed-l2":
        return l2_normalise_rows(uniform_matrix(stream_key(seed, "fixed-l2"), vocab_size, dim, -1, 1))
    if name == "hadamard":
        n = hadamard_order(vocab_size, dim)
        return hadamard_rows(vocab_size, choose_hadamard_columns(n, dim, seed))
    raise ValueError(f"'{name}' is not a frozen head (fixed-uniform, fixed-l2, hadamard)")


class _FrozenDenseHead(FrostHead):
    """f · targetsᵀ with no bias and nothing learned (models/heads/fixed-dense.ts)."""

    frozen = True

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0, **options):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)
        targets = frozen_matrix(self.name, seed, vocab_size, input_dim, **options)
        self.register_buffer("targets", targets, persistent=False)

    def logits(self, f, embedding):
        return f @ self.targets.t()


class FixedUniformHead(_FrozenDenseHead):
    """Every cell uniform in [-limit, limit] (the paper's [-10, 10]), stream 'fixed-uniform'."""

    name = "fixed-uniform"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0, limit: float = 10):
        if not limit > 0:
            raise ValueError(f"'limit' must be positive, got {limit}")
        super().__init__(vocab_size, input_dim, embedding_dim, seed, limit=limit)


class FixedL2Head(_FrozenDenseHead):
    """Rows uniform in [-1, 1] (stream 'fixed-l2'), each divided by its L2 norm."""

    name = "fixed-l2"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)


class HadamardHead(FrostHead):
    """Hoffer et al.: rows of a Sylvester Hadamard matrix, f L2-normalised, one learned scale."""

    name = "hadamard"
    frozen = True
    EPS = 1e-12

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)
        targets = frozen_matrix("hadamard", seed, vocab_size, input_dim)
        self.register_buffer("targets", targets, persistent=False)
        # frost starts the temperature at 1/sqrt(|V|).
        self.scale = self._param("scale", (1,), "constant", 1 / math.sqrt(vocab_size))

    def logits(self, f, embedding):
        norm = torch.sqrt(torch.sum(torch.square(f), 1, keepdim=True) + self.EPS)
        return (f / norm) @ self.targets.t() * self.scale
