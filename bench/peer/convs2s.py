#!/usr/bin/python3
"""
PyTorch peer of frost's convs2s model (models/archs/convs2s.ts) for bench/train-speed.ts
(`npm run bench:train -- --arch convs2s`): the same architecture, shapes, output heads, batches,
loss and optimiser, timed the same way as bench/peer/rnn_attn.py (whose reader and timing loop it
uses).

    /usr/bin/python3 bench/peer/convs2s.py --batches FILE --head learned --steps 20 --warmup 3 --threads 2 \
        --config '{"embedding":256,"encoderLayers":"256:3*4","decoderLayers":"256:3*3","output":256,"maxPositions":256,"dropout":0.2}'

The model, written the way fairseq's fconv writes it (without weight normalisation, as frost):
  encoder  dropout(E[src] + P[pos]) -> Linear(e->C0) -> per layer: residual (Linear if C changes),
           padding zeroed, dropout, nn.Conv1d(C, 2C', k, padding=(k-1)/2), GLU, (x + residual)*sqrt(.5);
           keys z = Linear(C->e)(x) (padding zeroed), values v = (z + input embedding)*sqrt(.5)
  decoder  g = dropout(E[y] + P[pos]) -> Linear(e->C0) -> per layer: dropout, causal nn.Conv1d
           (left padding k-1), GLU, multi-step attention over (z, v) with g, (x + residual)*sqrt(.5)
  f        dropout(Linear(C->d)(x)) -> head (bench/peer/heads.py)
  loss     sum of masked token cross-entropies / tokens; Adam (lr 1e-3), gradient norm clipped to 5.
"""
import math
import sys

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from heads import make_head  # noqa: E402
from rnn_attn import main  # noqa: E402


def parse_layers(spec):
    layers = []
    for run in spec.split(','):
        shape, _, count = run.strip().partition('*')
        channels, width = (int(v) for v in shape.split(':'))
        layers += [(channels, width)] * int(count or 1)
    return layers


def build(torch, nn, src_vocab, tgt_vocab, head, cfg):
    e, d, p, max_pos = cfg['embedding'], cfg['output'], cfg['dropout'], cfg['maxPositions']
    enc_layers = parse_layers(cfg['encoderLayers'])
    dec_layers = parse_layers(cfg['decoderLayers'])
    F = nn.functional
    half = math.sqrt(0.5)

    def stack(layers):
        convs, residuals = nn.ModuleList(), nn.ModuleList()
        c_in = layers[0][0]
        for c, k in layers:
            convs.append(nn.Conv1d(c_in, 2 * c, k))
            residuals.append(nn.Linear(c_in, c) if c_in != c else nn.Identity())
            c_in = c
        return convs, residuals

    class Convs2s(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(src_vocab, e)
            self.tgt_emb = nn.Embedding(tgt_vocab, e)
            self.src_pos = nn.Embedding(max_pos, e)
            self.tgt_pos = nn.Embedding(max_pos, e)
            self.enc_in = nn.Linear(e, enc_layers[0][0])
            self.enc_convs, self.enc_res = stack(enc_layers)
            self.enc_out = nn.Linear(enc_layers[-1][0], e)
            self.dec_in = nn.Linear(e, dec_layers[0][0])
            self.dec_convs, self.dec_res = stack(dec_layers)
            self.att_in = nn.ModuleList([nn.Linear(c, e) for c, _ in dec_layers])
            self.att_out = nn.ModuleList([nn.Linear(e, c) for c, _ in dec_layers])
            self.dec_out = nn.Linear(dec_layers[-1][0], d)
            self.head = make_head(torch, nn, head, d, e, tgt_vocab, p, self.tgt_emb)

        def encode(self, src, src_len):
            B, S = src.shape
            pos = torch.arange(S).clamp(max=max_pos - 1)
            emb = F.dropout(self.src_emb(src) + self.src_pos(pos)[None], p, self.training)
            mask = (torch.arange(S)[None, :] < src_len[:, None]).float()  # [B, S]
            x = self.enc_in(emb)
            for conv, res in zip(self.enc_convs, self.enc_res):
                residual = res(x)
                x = F.dropout(x * mask[:, :, None], p, self.training).transpose(1, 2)  # [B, C, S]
                k = conv.kernel_size[0]
                x = F.glu(conv(F.pad(x, ((k - 1) // 2, (k - 1) // 2))), dim=1).transpose(1, 2)
                x = (x + residual) * half
            keys = self.enc_out(x) * mask[:, :, None]
            values = (keys + emb) * half * src_len.float().sqrt()[:, None, None]
            return keys, values, (mask - 1) * 1e9

        def forward(self, b):
            B, T = b['B'], b['T']
            keys, values, penalty = self.encode(b['src'], b['src_len'])
            pos = torch.arange(T).clamp(max=max_pos - 1)
            g = F.dropout(self.tgt_emb(b['tgt_in']) + self.tgt_pos(pos)[None], p, self.training)  # [B, T, e]
            x = self.dec_in(g)
            keys_t = keys.transpose(1, 2)
            for conv, res, a_in, a_out in zip(self.dec_convs, self.dec_res, self.att_in, self.att_out):
                residual = res(x)
                h = F.dropout(x, p, self.training).transpose(1, 2)
                k = conv.kernel_size[0]
                h = F.glu(conv(F.pad(h, (k - 1, 0))), dim=1).transpose(1, 2)  # causal
                q = (a_in(h) + g) * half
                attn = torch.softmax(torch.bmm(q, keys_t) + penalty[:, None, :], dim=2)
                h = (a_out(torch.bmm(attn, values)) + h) * half
                x = (h + residual) * half
            f = F.dropout(self.dec_out(x), p, self.training).reshape(B * T, d)
            nll = F.cross_entropy(self.head(f), b['tgt_out'].reshape(-1), reduction='none')
            return (nll * b['mask'].reshape(-1)).sum() / b['tokens']

    return Convs2s()


if __name__ == '__main__':
    sys.exit(main(build))
