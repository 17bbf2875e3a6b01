"""The heads that score against the target embedding E [|V|, e]: tied, the four normalised shared
scorings and DRILL (models/heads/tied.ts, shared-*.ts, shared-normalised.ts, drill.ts).

E is not theirs: forward takes it (the model's nn.Embedding or its weight), so the input lookup and
the output layer keep sharing one matrix. When d != e a learned projection P [d, e] maps f into E's
space first.
"""

from typing import Optional

import torch
import torch.nn.functional as F

from .base import FrostHead

#: Added under every square root of a sum of squares (shared-normalised.ts's EPS).
EPS = 1e-6


def row_norms(E: torch.Tensor) -> torch.Tensor:
    """[rows, 1]: sqrt(sum of squares + EPS), as frost's rowNorms."""
    return torch.sqrt(torch.sum(torch.square(E), 1, keepdim=True) + EPS)


class _SharedHead(FrostHead):
    """One builder for the scorings of "Normalization of Input-output Shared Embeddings in Text
    Generation Models": they differ only in how E becomes an output matrix and a bias."""

    uses_embedding = True
    #: Whether scores get a learned bias b [|V|].
    learned_bias = True
    #: Whether f is L2-normalised and the scores multiplied by a learned scale (cosine).
    cosine = False

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0, initial_scale: float = 10):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)
        self._projection()
        self.b = self._param("b", (vocab_size,), "zeros") if self.learned_bias else None
        self.scale = self._param("scale", (1,), "constant", initial_scale) if self.cosine else None

    def row_scale(self, E: torch.Tensor) -> Optional[torch.Tensor]:
        """The per-row divisor s [|V|, 1] that turns E into the output matrix E / s; None: E itself."""
        return None

    def derived_bias(self, E: torch.Tensor) -> Optional[torch.Tensor]:
        """A bias computed from E (the distance scoring's), or None."""
        return None

    def logits(self, f, embedding):
        E = self._embedding(embedding)
        x = self._project(f)
        if self.cosine:
            x = x / row_norms(x)
        s = self.row_scale(E)
        scores = x @ (E if s is None else E / s).t()
        if self.scale is not None:
            scores = scores * self.scale
        if self.b is not None:
            scores = scores + self.b
        bias = self.derived_bias(E)
        return scores if bias is None else scores + bias


class TiedHead(_SharedHead):
    """Press & Wolf: the output matrix is E itself; a learned bias."""

    name = "tied"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)


class SharedL2Head(_SharedHead):
    """E with L2-normalised rows, w_j / ||w_j||; a learned bias."""

    name = "shared-l2"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)

    def row_scale(self, E):
        return row_norms(E)


class SharedSqnormHead(_SharedHead):
    """E with rows divided by their squared norm, w_j / ||w_j||²; a learned bias."""

    name = "shared-sqnorm"

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)

    def row_scale(self, E):
        return torch.square(row_norms(E))


class SharedDistanceHead(_SharedHead):
    """-½||x - w_j||² up to a term equal for every word (it cancels in the softmax): x·w_j - ½||w_j||²."""

    name = "shared-distance"
    learned_bias = False

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0):
        super().__init__(vocab_size, input_dim, embedding_dim, seed)

    def derived_bias(self, E):
        return torch.sum(torch.square(E), 1) * -0.5


class SharedCosineHead(_SharedHead):
    """s·cos(f, w_j): cosines lie in [-1, 1], too flat for a softmax over many words, so a learned
    temperature s multiplies them."""

    name = "shared-cosine"
    learned_bias = False
    cosine = True

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0, initial_scale: float = 10):
        if not initial_scale > 0:
            raise ValueError(f"'initial_scale' must be positive, got {initial_scale}")
        super().__init__(vocab_size, input_dim, embedding_dim, seed, initial_scale)

    def row_scale(self, E):
        return row_norms(E)


class DrillHead(FrostHead):
    """Pappas & Henderson's deep residual output layer: E⁽ⁱ⁾ = dropout(tanh(E⁽ⁱ⁻¹⁾U⁽ⁱ⁾ + bᵢ)) + E⁽ⁱ⁻¹⁾ + E,
    E⁽⁰⁾ = E, scores f·E⁽ᵏ⁾ᵀ + b.

    Dropout is torch's (inverted, like frost's), so training masks differ from frost's seeded ones;
    in eval mode the function is frost's exactly. frost's default rate is the architecture's
    dropout; here it is 0 unless given.
    """

    name = "drill"
    uses_embedding = True

    def __init__(self, vocab_size, input_dim, embedding_dim=None, seed=0, layers: int = 2, dropout: float = 0.0):
        if not (isinstance(layers, int) and layers >= 0):
            raise ValueError(f"'layers' must be a non-negative integer, got {layers}")
        if not 0 <= dropout < 1:
            raise ValueError(f"'dropout' must be in [0, 1), got {dropout}")
        super().__init__(vocab_size, input_dim, embedding_dim, seed)
        self._projection()
        e = self.embedding_dim
        self.layers = layers
        self.dropout = dropout
        for i in range(layers):
            self._param(f"U{i}", (e, e), "glorot-uniform")
            self._param(f"bU{i}", (e,), "zeros")
        self.b = self._param("b", (vocab_size,), "zeros")

    def output_matrix(self, E: torch.Tensor) -> torch.Tensor:
        """E⁽ᵏ⁾ [|V|, e]: it depends on E only, so an exported or serving model can compute it once."""
        Ei = E
        for i in range(self.layers):
            hidden = torch.tanh(Ei @ getattr(self, f"U{i}") + getattr(self, f"bU{i}"))
            if self.training and self.dropout > 0:
                hidden = F.dropout(hidden, self.dropout, training=True)
            Ei = (hidden + Ei) + E
        return Ei

    def logits(self, f, embedding):
        return self._project(f) @ self.output_matrix(self._embedding(embedding)).t() + self.b
