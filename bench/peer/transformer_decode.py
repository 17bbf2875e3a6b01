#!/usr/bin/python3
"""
PyTorch decoding peer of bench/decode-speed.ts for `--arch transformer`: frost's Transformer
(models/archs/transformer.ts) with frost's own weights, decoding the same source ids with the same search to the
same output length, written the way PyTorch inference code for it is written (fairseq's incremental decoder):
eval mode, torch.inference_mode, nn.Linear projections, each decoder layer's self-attention keys and values cached
and extended by one position per step, the source keys and values computed once per sentence, index_select to
follow beams (rnn_attn_decode.py's search).

    OMP_NUM_THREADS=1 /usr/bin/python3 bench/peer/transformer_decode.py --threads 1

Weights: frost's parameters from the request's `params` checkpoint (ctranslate2_decode.py's load_params; x W
+ b with W [in, out] is nn.Linear's weight W^T), so the bench checks that both produce the same tokens before it
times them. The `learned` and `tied` heads (a projection with bias) are mapped, with relu, gelu or swish, as
ctranslate2_decode.py maps them.

Protocol: ctranslate2_decode.py's (one JSON object per line each way), with
  {"cmd": "info"} -> torch's version, threads, BLAS libraries and int8 engine
  {"cmd": "model", "key": K, "dir": model folder, "config": archConfig, "head": H, "int8": bool}
      int8: torch.ao.quantization.quantize_dynamic on every nn.Linear (int8 weights, activations quantised per
      call), PyTorch's counterpart of onnxruntime's dynamic quantisation
  {"cmd": "decode", "key": K, "chunks": [...], "beam": k, "tokens": n, "specials": {...}} -> {"ms": total}
  {"cmd": "hypotheses", "key": K, "sources": [...], "beam": k, "tokens": n, "specials": {...}}
      the k hypotheses of each source, n tokens each (n + 1 steps, the last the forced </s>), best first
"""
import math
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from ctranslate2_decode import LAYER_NORM_EPS, load_params, serve, sinusoids  # noqa: E402
from rnn_attn import loaded_blas  # noqa: E402
from rnn_attn_decode import search, source_batch  # noqa: E402

MASKED_KEY_BIAS = -1e9  # frost's (models/layers/multi-head-attention.ts)


def build(torch, nn, cfg, t, head):
    """frost's Transformer at inference, its parameters `t` (name -> array) loaded."""
    F = nn.functional
    d, h = cfg['model'], cfg['heads']
    dk = d // h
    pre = cfg['norm'] == 'pre'
    act = {'relu': F.relu, 'gelu': F.gelu, 'swish': F.silu}[cfg['activation']]
    scale = math.sqrt(d) if cfg.get('embeddingScale', 'sqrt-d') == 'sqrt-d' else 1.0
    if cfg.get('layernormEmbedding'):
        raise ValueError('layernormEmbedding is not mapped to the PyTorch peer')

    def linear(name_w, name_b):
        m = nn.Linear(*t[name_w].shape)
        m.weight.data = torch.from_numpy(t[name_w].T.copy())
        m.bias.data = torch.from_numpy(t[name_b].copy())
        return m

    def norm(name):
        m = nn.LayerNorm(d, eps=LAYER_NORM_EPS)
        m.weight.data = torch.from_numpy(t[f'{name}/gamma'].copy())
        m.bias.data = torch.from_numpy(t[f'{name}/beta'].copy())
        return m

    class Attention(nn.Module):
        def __init__(self, name):
            super().__init__()
            for p in 'qkvo':
                setattr(self, p, linear(f'{name}/W{p}', f'{name}/b{p}'))

        def heads(self, x, proj):  # [B, L, d] -> [B, h, L, dk]
            return proj(x).view(x.shape[0], x.shape[1], h, dk).transpose(1, 2)

        def forward(self, x, k, v, bias):
            scores = self.heads(x, self.q) @ k.transpose(2, 3) / math.sqrt(dk)
            if bias is not None:
                scores = scores + bias
            ctx = torch.softmax(scores, -1) @ v
            return self.o(ctx.transpose(1, 2).reshape(x.shape[0], x.shape[1], d))

    class FeedForward(nn.Module):
        def __init__(self, name):
            super().__init__()
            self.fc1, self.fc2 = linear(f'{name}/W1', f'{name}/b1'), linear(f'{name}/W2', f'{name}/b2')

        def forward(self, x):
            return self.fc2(act(self.fc1(x)))

    def residual(x, ln, f):
        return x + f(ln(x)) if pre else ln(x + f(x))

    class Layer(nn.Module):
        def __init__(self, name, cross):
            super().__init__()
            self.self_attn, self.ln1 = Attention(f'{name}/self'), norm(f'{name}/ln1')
            if cross:
                self.cross, self.ln2, self.ln3 = Attention(f'{name}/cross'), norm(f'{name}/ln2'), norm(f'{name}/ln3')
            else:
                self.ln2 = norm(f'{name}/ln2')
            self.ff = FeedForward(f'{name}/ff')

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tgt_emb = nn.Embedding.from_pretrained(torch.from_numpy(t['decoder/embedding'].copy()))
            self.src_emb = (self.tgt_emb if 'encoder/embedding' not in t
                            else nn.Embedding.from_pretrained(torch.from_numpy(t['encoder/embedding'].copy())))
            table = (lambda n: torch.from_numpy(t[f'{n}/table'].copy())) if cfg['positions'] == 'learned' else (
                lambda n: torch.from_numpy(sinusoids(1024, d, cfg['positions'])))
            self.register_buffer('src_pos', table('encoder/positions'))
            self.register_buffer('tgt_pos', table('decoder/positions'))
            self.enc = nn.ModuleList([Layer(f'encoder/layer{l}', False) for l in range(cfg['encoderLayers'])])
            self.dec = nn.ModuleList([Layer(f'decoder/layer{l}', True) for l in range(cfg['decoderLayers'])])
            self.enc_norm = norm('encoder/norm') if pre else nn.Identity()
            self.dec_norm = norm('decoder/norm') if pre else nn.Identity()
            if head == 'learned':
                self.head = linear('head/W', 'head/b')
            else:  # tied: the target embedding scores, with the head's bias where it has one
                E = t['decoder/embedding']
                self.head = nn.Linear(d, E.shape[0])
                self.head.weight.data = torch.from_numpy(E.copy())
                self.head.bias.data = torch.from_numpy(t.get('head/b', np.zeros(E.shape[0], np.float32)).copy())

        def encode(self, src, src_len):
            """Per decoder layer the source keys and values [B, h, S, dk], and the padding bias [B, 1, 1, S]."""
            S = src.shape[1]
            bias = ((torch.arange(S)[None, :] >= src_len[:, None]).float() * MASKED_KEY_BIAS)[:, None, None, :]
            x = self.src_emb(src) * scale + self.src_pos[:S][None]
            for layer in self.enc:
                x = residual(x, layer.ln1, lambda y: layer.self_attn(y, layer.self_attn.heads(y, layer.self_attn.k),
                                                                     layer.self_attn.heads(y, layer.self_attn.v), bias))
                x = residual(x, layer.ln2, layer.ff)
            x = self.enc_norm(x)
            cross = [(layer.cross.heads(x, layer.cross.k), layer.cross.heads(x, layer.cross.v)) for layer in self.dec]
            return cross, bias

        def step(self, y, cache, cross, bias):
            """Log-probabilities [N, |V|] for the previous tokens y [N]; `cache` (per layer [k, v]) grows by one."""
            position = cache[0][0].shape[2] if cache[0][0] is not None else 0
            x = (self.tgt_emb(y) * scale + self.tgt_pos[position])[:, None, :]
            for layer, kv, (ck, cv) in zip(self.dec, cache, cross):
                def self_attn(z):
                    k, v = layer.self_attn.heads(z, layer.self_attn.k), layer.self_attn.heads(z, layer.self_attn.v)
                    if kv[0] is not None:
                        k, v = torch.cat([kv[0], k], 2), torch.cat([kv[1], v], 2)
                    kv[0], kv[1] = k, v
                    return layer.self_attn(z, k, v, None)
                x = residual(x, layer.ln1, self_attn)
                x = residual(x, layer.ln2, lambda z: layer.cross(z, ck, cv, bias))
                x = residual(x, layer.ln3, layer.ff)
            return torch.log_softmax(self.head(self.dec_norm(x)[:, 0]), 1)

    return Transformer()


def decode_chunk(torch, model, sources, tokens, beam, sp):
    """One batch of sources, `tokens` decoder steps (the last the forced </s>): the tokens and beam scores."""
    cross, bias = model.encode(*source_batch(torch, sources, sp['pad']))
    state = {'cache': [[None, None] for _ in cross], 'cross': cross, 'bias': bias}

    def expand(rows):
        state['cross'] = [(k[rows], v[rows]) for k, v in state['cross']]
        state['bias'] = state['bias'][rows]
        follow(rows)

    def follow(rows):
        state['cache'] = [[k.index_select(0, rows), v.index_select(0, rows)] for k, v in state['cache']]

    return search(torch, len(sources), tokens, beam, sp,
                  lambda y: model.step(y, state['cache'], state['cross'], state['bias']), expand, follow)


class Peer:
    def __init__(self, torch, nn):
        self.torch, self.nn = torch, nn
        self.models = {}

    def info(self, _req):
        torch = self.torch
        return {'torch': torch.__version__, 'threads': torch.get_num_threads(), 'blas': loaded_blas(),
                'quantizedEngine': torch.backends.quantized.engine}

    def model(self, req):
        torch, nn = self.torch, self.nn
        if req['head'] not in ('learned', 'tied'):
            raise ValueError(f"head '{req['head']}': only 'learned' and 'tied' (a projection with bias) are mapped")
        model = build(torch, nn, req['config'], load_params(req['params']), req['head'])
        model.eval()
        if req.get('int8'):
            # Debian's torch has no fbgemm; qnnpack is its int8 CPU engine.
            if torch.backends.quantized.engine == 'none' and 'qnnpack' in torch.backends.quantized.supported_engines:
                torch.backends.quantized.engine = 'qnnpack'
            model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        self.models[req['key']] = model
        return {'ok': True, 'int8': bool(req.get('int8')), 'quantizedEngine': torch.backends.quantized.engine}

    def decode(self, req):
        model = self.models[req['key']]
        t0 = time.perf_counter()
        with self.torch.inference_mode():
            for sources in req['chunks']:
                decode_chunk(self.torch, model, sources, req['tokens'], req['beam'], req['specials'])
        return {'ms': (time.perf_counter() - t0) * 1000}

    def hypotheses(self, req):
        beam, B = req['beam'], len(req['sources'])
        with self.torch.inference_mode():
            history, _ = decode_chunk(self.torch, self.models[req['key']], req['sources'], req['tokens'] + 1, beam,
                                      req['specials'])
        rows = history.tolist()
        return {'hypotheses': [rows[b * beam:(b + 1) * beam] for b in range(B)]}


def main():
    threads = int(sys.argv[sys.argv.index('--threads') + 1]) if '--threads' in sys.argv else 1
    import torch
    from torch import nn
    torch.set_num_threads(threads)
    return serve(Peer(torch, nn))


if __name__ == '__main__':
    sys.exit(main())
