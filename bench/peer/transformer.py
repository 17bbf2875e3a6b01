#!/usr/bin/python3
"""
PyTorch peer of frost's Transformer (models/archs/transformer.ts) for bench/train-speed.ts
(`npm run bench:train -- --arch transformer`): the same architecture, shapes, output heads,
batches, loss and optimiser, timed the same way as bench/peer/rnn_attn.py (whose reader and timing
loop it uses).

    /usr/bin/python3 bench/peer/transformer.py --batches FILE --head shared-l2 --steps 10 --warmup 2 --threads 2 \
        --config '{"encoderLayers":3,"decoderLayers":3,"model":256,"heads":4,"ff":1024,"dropout":0.1,
                   "attentionDropout":0.1,"activationDropout":0,"norm":"post","activation":"relu",
                   "positions":"sinusoidal","maxPositions":256,"jointEmbedding":true,"labelSmoothing":0.1,
                   "clipNorm":0,"adamBetas":[0.9,0.98]}'

The model, built from PyTorch's own nn.TransformerEncoderLayer / nn.TransformerDecoderLayer
(batch_first, norm_first for norm=pre), as PyTorch translation code builds it:
  embed    x = dropout(sqrt(d) E[token] + P[position]); P sinusoidal ([sin | cos], frost's layout) or a
           learned table; with jointEmbedding the source and target embedding are one nn.Embedding
  encoder  N x nn.TransformerEncoderLayer (self-attention with the source padding as key_padding_mask)
  decoder  N x nn.TransformerDecoderLayer (causal self-attention, attention over the encoder output)
           norm=pre: one more LayerNorm ends each stack (nn.TransformerEncoder/Decoder's `norm`)
  head     bench/peer/heads.py over every padded target position (--targets padded, what PyTorch
           NMT code does) or only the real ones (--targets packed, what frost does)
  loss     label-smoothed cross-entropy (F.cross_entropy's label_smoothing, the config's
           labelSmoothing), masked, summed / tokens; Adam with the recipe's betas, clipping as the
           recipe says (0: none)
The layers' `dropout` (attention weights) is the config's attentionDropout, dropout1..3 (residual
branches) its dropout, and the feed-forward's inner dropout its activationDropout, as frost has them.
"""
import math
import sys

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from heads import make_head  # noqa: E402
from rnn_attn import main  # noqa: E402


def build(torch, nn, src_vocab, tgt_vocab, head, cfg):
    d, p = cfg['model'], cfg['dropout']
    F = nn.functional
    pre = cfg['norm'] == 'pre'
    smoothing = cfg.get('labelSmoothing', 0.0)
    joint = cfg.get('jointEmbedding', False)
    if joint and src_vocab != tgt_vocab:
        raise SystemExit(f'jointEmbedding needs one vocabulary, got {src_vocab} and {tgt_vocab}')

    def layer(cls):
        m = cls(d, cfg['heads'], cfg['ff'], dropout=p, activation=cfg['activation'], batch_first=True,
                norm_first=pre)
        # PyTorch's one `dropout` rate covers three places; frost's config names each.
        m.self_attn.dropout = cfg['attentionDropout']
        if hasattr(m, 'multihead_attn'):
            m.multihead_attn.dropout = cfg['attentionDropout']
        m.dropout = nn.Dropout(cfg['activationDropout'])
        return m

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tgt_emb = nn.Embedding(tgt_vocab, d)
            self.src_emb = self.tgt_emb if joint else nn.Embedding(src_vocab, d)
            nn.init.uniform_(self.tgt_emb.weight, -math.sqrt(3 / d), math.sqrt(3 / d))
            if cfg['positions'] == 'learned':
                self.src_pos = nn.Embedding(cfg['maxPositions'], d)
                self.tgt_pos = nn.Embedding(cfg['maxPositions'], d)
            self.encoder = nn.TransformerEncoder(layer(nn.TransformerEncoderLayer), cfg['encoderLayers'],
                                                 norm=nn.LayerNorm(d) if pre else None,
                                                 enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoder(layer(nn.TransformerDecoderLayer), cfg['decoderLayers'],
                                                 norm=nn.LayerNorm(d) if pre else None)
            self.head = make_head(torch, nn, head, d, d, tgt_vocab, p, self.tgt_emb)

        def embed(self, E, P, ids):
            L = ids.shape[1]
            pos = P(torch.arange(L)) if cfg['positions'] == 'learned' else sinusoidal(torch, L, d)
            return F.dropout(E(ids) * math.sqrt(d) + pos[None], p, self.training)

        def forward(self, b):
            T, S = b['T'], b['S']
            src_pad = torch.arange(S)[None, :] >= b['src_len'][:, None]  # True = padding
            memory = self.encoder(self.embed(self.src_emb, getattr(self, 'src_pos', None), b['src']),
                                  src_key_padding_mask=src_pad)
            causal = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
            out = self.decoder(self.embed(self.tgt_emb, getattr(self, 'tgt_pos', None), b['tgt_in']), memory,
                               tgt_mask=causal, memory_key_padding_mask=src_pad)
            return target_loss(F, self.head, out, b, smoothing)

    return Transformer()


def sinusoidal(torch, L, d):
    """Sinusoidal positions [L, d] in frost's layout: [sin | cos], frequencies 10000^(-2i/d)."""
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    omega = torch.pow(10000.0, -2 * torch.arange(d // 2, dtype=torch.float32) / d)[None, :]
    return torch.cat([torch.sin(pos * omega), torch.cos(pos * omega)], 1)


def pack_targets(torch, b):
    """--targets packed: the flat indices of the target positions that count, for the head and loss."""
    return dict(b, packed_rows=torch.nonzero(b['mask'].reshape(-1) > 0).reshape(-1))


def target_loss(F, head, out, b, smoothing):
    """
    The recipe's loss of a decoder output [B, T, d]: the head over every padded target position, or only the real
    ones (--targets packed), label-smoothed cross-entropy, masked, summed / tokens.
    """
    f = out.reshape(b['B'] * b['T'], -1)
    targets = b['tgt_out'].reshape(-1)
    mask = b['mask'].reshape(-1)
    if b.get('packed_rows') is not None:  # --targets packed: only the positions that count
        rows = b['packed_rows']
        f, targets, mask = f[rows], targets[rows], mask[rows]
    nll = F.cross_entropy(head(f), targets, reduction='none', label_smoothing=smoothing)
    return (nll * mask).sum() / b['tokens']


build.pack_targets = pack_targets

if __name__ == '__main__':
    sys.exit(main(build))
