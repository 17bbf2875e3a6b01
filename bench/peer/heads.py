"""
The output heads of frost's models (models/heads/*.ts) in PyTorch, shared by the training peers
(bench/peer/rnn_attn.py, bench/peer/convs2s.py, bench/peer/transformer.py): learned, tied, fixed-l2,
hadamard, drill, and seed 003's shared-l2 and shared-sqnorm (models/heads/shared-normalised.ts: the
output matrix is the shared embedding with its rows divided by their norm or squared norm, plus a
learned bias).
Frozen matrices are buffers (no gradient, no Adam state) holding random values of the same shape.
"""


def make_head(torch, nn, head, d, e, tgt_vocab, p, emb):
    """The head scoring f [N, d] against |V| target vectors; `emb` is the decoder's target nn.Embedding."""
    F = nn.functional

    class Head(nn.Module):
        def __init__(self, emb):
            super().__init__()
            self.kind = head
            self.emb = emb  # the decoder's target embedding (tied, drill share it)
            if head == 'learned':
                self.out = nn.Linear(d, tgt_vocab)
            elif head in ('tied', 'drill'):
                self.P = nn.Linear(d, e, bias=False)
                self.b = nn.Parameter(torch.zeros(tgt_vocab))
                if head == 'drill':
                    self.U = nn.ModuleList([nn.Linear(e, e) for _ in range(2)])
            elif head in ('shared-l2', 'shared-sqnorm'):
                if d != e:
                    raise SystemExit(f'{head}: the peer scores f [d] against E [e] directly and needs d == e')
                self.b = nn.Parameter(torch.zeros(tgt_vocab))
            elif head == 'fixed-l2':
                T = torch.rand(tgt_vocab, d) * 2 - 1
                self.register_buffer('T', T / T.norm(dim=1, keepdim=True))
            elif head == 'hadamard':
                self.register_buffer('T', torch.randint(0, 2, (tgt_vocab, d)).float() * 2 - 1)
                self.scale = nn.Parameter(torch.full((1,), tgt_vocab ** -0.5))
            else:
                raise SystemExit(f'unknown head {head}')

        def forward(self, f):
            if self.kind == 'learned':
                return self.out(f)
            if self.kind == 'tied':
                return F.linear(self.P(f), self.emb.weight, self.b)
            if self.kind == 'drill':
                E = self.emb.weight
                Ei = E
                for layer in self.U:
                    Ei = F.dropout(torch.tanh(layer(Ei)), p, self.training) + Ei + E
                return F.linear(self.P(f), Ei, self.b)
            if self.kind in ('shared-l2', 'shared-sqnorm'):
                E = self.emb.weight
                norms = torch.sqrt((E * E).sum(1, keepdim=True) + 1e-6)
                return F.linear(f, E / (norms if self.kind == 'shared-l2' else norms * norms), self.b)
            if self.kind == 'fixed-l2':
                return F.linear(f, self.T)
            # hadamard
            return F.linear(f / torch.sqrt((f * f).sum(1, keepdim=True) + 1e-12), self.T) * self.scale


    return Head(emb)
