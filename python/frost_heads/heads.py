"""The learned baseline and the registry of every head by frost's name (models/heads/index.ts)."""

import re

from .base import FrostHead
from .frozen import FixedL2Head, FixedUniformHead, HadamardHead
from .shared import DrillHead, SharedCosineHead, SharedDistanceHead, SharedL2Head, SharedSqnormHead, TiedHead


class LearnedHead(FrostHead):
    """The usual output layer: f W + b with W [d, |V|] (frost's layout, the transpose of nn.Linear's) and b learned."""

    name = "learned"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)
        self.W = self._param("W", (input_dim, vocab_size), "glorot-uniform")
        self.b = self._param("b", (vocab_size,), "zeros")

    def logits(self, f, embedding):
        return f @ self.W + self.b


#: Every head by frost's name, in frost's order.
HEADS = {
    cls.name: cls
    for cls in (
        LearnedHead,
        TiedHead,
        FixedUniformHead,
        FixedL2Head,
        HadamardHead,
        SharedL2Head,
        SharedSqnormHead,
        SharedDistanceHead,
        SharedCosineHead,
        DrillHead,
    )
}


def build_head(name: str, vocab_size: int, input_dim: int, embedding_dim=None, seed: int = 0, options=None):
    """Head `name` built as frost's buildHead builds it; `options` are frost's `--head-option`s
    (camelCase as in frost, e.g. {'initialScale': 5}, or snake_case)."""
    if name not in HEADS:
        raise KeyError(f"unknown head '{name}' (known: {', '.join(HEADS)})")
    kwargs = {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in (options or {}).items()}
    return HEADS[name](vocab_size, input_dim, embedding_dim, seed, **kwargs)
