"""What every head shares: its sizes, frost-initialised parameters under frost's names, and a
forward pass over f of any leading shape."""

from typing import Optional

import torch
from torch import nn

from .params import frost_init


class FrostHead(nn.Module):
    """An output layer: scores the decoder's output vectors f [..., d] against one target vector per word.

    Parameters start as frost's do for the same seed (params.py) and are named as in frost without
    the 'head/' prefix (W, b, P, scale, U0, bU0, ...), in frost's layouts (W is [d, |V|]), so a
    frost checkpoint's head loads with load_frost_state_dict. Frozen target matrices are
    non-persistent buffers: rebuilt from the seed, never in the state_dict.
    """

    #: frost's head name (`frost train --head NAME`).
    name = ""
    #: Whether the target vectors are frozen rather than learned.
    frozen = False
    #: Whether forward needs the target embedding E [|V|, e].
    uses_embedding = False

    def __init__(self, vocab_size: int, input_dim: int, embedding_dim: Optional[int] = None, seed: int = 0):
        super().__init__()
        self.vocab_size = vocab_size
        self.input_dim = input_dim
        self.embedding_dim = input_dim if embedding_dim is None else embedding_dim
        self.seed = seed

    def _param(self, name: str, shape: tuple, kind: str, value: float = 0.0) -> nn.Parameter:
        p = nn.Parameter(frost_init(self.seed, "head/" + name, shape, kind, value))
        self.register_parameter(name, p)
        return p

    def _projection(self) -> None:
        """P [d, e], learned, when f must be brought into the embedding's space (Press & Wolf); else none."""
        if self.input_dim == self.embedding_dim:
            self.P = None
        else:
            self.P = self._param("P", (self.input_dim, self.embedding_dim), "glorot-uniform")

    def _project(self, f: torch.Tensor) -> torch.Tensor:
        return f if self.P is None else f @ self.P

    def _embedding(self, embedding) -> torch.Tensor:
        if embedding is None:
            raise ValueError(f"head '{self.name}' scores against the target embedding: pass forward(f, embedding)")
        weight = embedding.weight if isinstance(embedding, nn.Embedding) else embedding
        if tuple(weight.shape) != (self.vocab_size, self.embedding_dim):
            raise ValueError(f"embedding must be [{self.vocab_size}, {self.embedding_dim}], got {list(weight.shape)}")
        return weight

    def logits(self, f: torch.Tensor, embedding) -> torch.Tensor:
        """Scores [N, |V|] for f [N, d]; each head writes it as frost's head does."""
        raise NotImplementedError

    def forward(self, f: torch.Tensor, embedding=None) -> torch.Tensor:
        """Logits [..., |V|] for f [..., d]; `embedding` is E (a tensor or nn.Embedding) for the heads that use it."""
        if f.shape[-1] != self.input_dim:
            raise ValueError(f"f must end in {self.input_dim}, got {list(f.shape)}")
        out = self.logits(f.reshape(-1, self.input_dim), embedding)
        return out.reshape(*f.shape[:-1], out.shape[-1])

    def frost_state_dict(self) -> dict:
        """The learnable parameters under frost's names ('head/W', ...)."""
        return {"head/" + n: p.detach() for n, p in self.named_parameters(recurse=False)}

    def load_frost_state_dict(self, params: dict) -> None:
        """Loads frost's 'head/...' tensors (from a frost checkpoint); every learnable parameter must be there."""
        ours = dict(self.named_parameters(recurse=False))
        names = {k[len("head/"):] if k.startswith("head/") else k: v for k, v in params.items()}
        missing = sorted(set(ours) - set(names))
        unknown = sorted(set(names) - set(ours))
        if missing or unknown:
            raise KeyError(f"head '{self.name}': missing {missing}, unknown {unknown}")
        with torch.no_grad():
            for n, p in ours.items():
                p.copy_(torch.as_tensor(names[n], dtype=p.dtype).reshape(p.shape))

    def extra_repr(self) -> str:
        sizes = f"vocab_size={self.vocab_size}, input_dim={self.input_dim}, embedding_dim={self.embedding_dim}"
        return f"name={self.name!r}, {sizes}, seed={self.seed}"
