#!/usr/bin/python3
"""
PyTorch peer of frost's rnn-attn model for bench/train-speed.ts: the same architecture, shapes,
output heads, batches, loss and optimiser, timed the same way.

    /usr/bin/python3 bench/peer/rnn_attn.py --batches FILE --head learned --steps 20 --warmup 3 --threads 2

With --decode-server it is instead the decoding peer of bench/decode-speed.ts (see decode_server).

FILE is what bench/train-speed-data.ts writes (header: magic 'FTSB', version, |V| src, |V| tgt,
count; per batch B, S, T, tokens, src [B*S], srcLen [B], tgtIn [B*T], tgtOut [B*T] int32, tgtMask
[B*T] float32). Prints one JSON line (the last line of stdout) with the timings.

The model (models/archs/rnn-attn.ts, models/heads/*.ts), written the way PyTorch code is written:
  encoder  embedding -> dropout -> bidirectional nn.GRU over packed sequences (padding skipped,
           as frost's masked recurrence does); annotations [B, S, 2*eh]
  s_0      tanh(masked mean of annotations . Ws + bs)
  step t   c_t = additive attention(s_{t-1}); s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})
           (--targets packed: rows sorted longest target first, step t runs only the sentences not
           yet finished, as frost's decoder does; the default runs every row at every step, as
           PyTorch NMT code usually does)
  f        dropout(tanh([s; c; E y] Wo + bo))
  head     learned: f W + b | tied: (f P) E^T + b | fixed-l2: f T^T with T frozen (a buffer: no
           gradient, no Adam state) | hadamard: scale * (f/|f|) H^T, H frozen | drill: (f P) E_k^T + b,
           E_k a 2-layer residual MLP over E with dropout
  loss     sum of masked token cross-entropies / tokens; Adam (lr 1e-3), gradient norm clipped to 5
           (the config's clipNorm and adamBetas, when bench/train-speed.ts passes the recipe's, win).
PyTorch's GRU gate formulation is ONNX's linear_before_reset = 1, the same as frost's.
Frozen matrices hold random values of the same shape (speed does not depend on which values).
"""
import argparse
import json
import os
import re
import resource
import struct
import sys
import time

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from heads import make_head  # noqa: E402


def loaded_blas():
    """Shared libraries that provide BLAS/LAPACK/OpenMP in this process (from /proc/self/maps)."""
    try:
        with open('/proc/self/maps') as f:
            maps = f.read()
    except OSError:
        return []
    libs = sorted(set(re.findall(r'(/\S*(?:blas|lapack|mkl|gomp|iomp)\S*\.so\S*)', maps)))
    return libs


def blas_kernels(torch):
    """
    What BLAS torch runs here: the BLAS/LAPACK lines of torch.__config__.show(), and for OpenBLAS the kernels it
    chose for this CPU (openblas_get_corename, which OPENBLAS_CORETYPE overrides) and its build (openblas_get_config),
    read through ctypes from the library this process loaded.
    """
    import ctypes
    lines = []
    for line in torch.__config__.show().splitlines():
        line = line.strip()
        if line.startswith('- Build settings:'):  # only its BLAS, LAPACK and MKL settings, not the compiler flags
            settings = [kv.strip() for kv in line[len('- Build settings:'):].split(',')]
            lines += [kv for kv in settings if re.match(r'\w*(BLAS|LAPACK|MKL)\w*=', kv)]
        elif 'BLAS' in line or 'LAPACK' in line:
            lines.append(line.lstrip('- '))
    info = {'blasConfigLines': lines}
    for path in loaded_blas():
        try:
            lib = ctypes.CDLL(path)
            corename, config = lib.openblas_get_corename, lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        corename.restype = config.restype = ctypes.c_char_p
        info.update(blasCorename=corename().decode(), openblasConfig=config().decode(), openblasLibrary=path)
        break
    return info


def gemm_peak(torch, sizes=(1024, 2048), reps=4):
    """The best rate of a large square torch.mm at the set threads: PyTorch's GEMM peak on this machine."""
    best = None
    for n in sizes:
        a, b = torch.rand(n, n) * 2 - 1, torch.rand(n, n) * 2 - 1
        torch.mm(a, b)  # warm-up
        for _ in range(reps):
            t0 = time.perf_counter()
            torch.mm(a, b)
            rate = 2 * n ** 3 / (time.perf_counter() - t0)
            if best is None or rate > best['flopsPerSecond']:
                best = {'flopsPerSecond': rate, 'shape': f'[{n}×{n}]·[{n}×{n}]'}
    return best


def read_batches(path):
    with open(path, 'rb') as f:
        buf = f.read()
    magic, version, src_vocab, tgt_vocab, count = struct.unpack_from('<5i', buf, 0)
    if magic != 0x42535446 or version != 1:
        raise SystemExit(f'{path}: not a frost train-speed batch file')
    off = 20
    batches = []
    import torch
    for _ in range(count):
        B, S, T, tokens = struct.unpack_from('<4i', buf, off)
        off += 16

        def ints(n):
            nonlocal off
            t = torch.frombuffer(bytearray(buf[off:off + 4 * n]), dtype=torch.int32).to(torch.int64)
            off += 4 * n
            return t

        src = ints(B * S).view(B, S)
        src_len = ints(B)
        tgt_in = ints(B * T).view(B, T)
        tgt_out = ints(B * T).view(B, T)
        mask = torch.frombuffer(bytearray(buf[off:off + 4 * B * T]), dtype=torch.float32).view(B, T)
        off += 4 * B * T
        batches.append(dict(B=B, S=S, T=T, tokens=tokens, src=src, src_len=src_len, tgt_in=tgt_in, tgt_out=tgt_out, mask=mask))
    return src_vocab, tgt_vocab, batches


def pack_targets(torch, b):
    """
    The batch with rows sorted longest target first, plus counts[t] = rows still running at step t
    (what frost's models/packed-steps.ts does), for the --targets packed decoder.
    """
    T = b['T']
    lengths = ((b['mask'] > 0).long() * torch.arange(1, T + 1)).max(1).values  # one past the last unmasked position
    order = torch.sort(lengths, descending=True, stable=True).indices
    lengths = lengths[order]
    counts = [int((lengths > t).sum()) for t in range(T)]
    counts = [n for n in counts if n > 0]
    packed = dict(b, src=b['src'][order], src_len=b['src_len'][order], tgt_in=b['tgt_in'][order], counts=counts)
    packed['tgt_out'] = torch.cat([b['tgt_out'][order][:n, t] for t, n in enumerate(counts)])
    packed['mask'] = torch.cat([b['mask'][order][:n, t] for t, n in enumerate(counts)])
    return packed


def build(torch, nn, src_vocab, tgt_vocab, head, cfg):
    e, H, eh, att, d, p = cfg['embedding'], cfg['hidden'], cfg['encoderHidden'], cfg['attention'], cfg['output'], cfg['dropout']
    A = 2 * eh
    F = nn.functional

    class RnnAttn(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_emb = nn.Embedding(src_vocab, e)
            self.tgt_emb = nn.Embedding(tgt_vocab, e)
            self.encoder = nn.GRU(e, eh, batch_first=True, bidirectional=True)
            self.init = nn.Linear(A, H)
            self.Ua = nn.Linear(A, att, bias=False)
            self.Wa = nn.Linear(H, att)
            self.v = nn.Linear(att, 1, bias=False)
            self.cell = nn.GRUCell(e + A, H)
            self.out = nn.Linear(H + A + e, d)
            self.head = make_head(torch, nn, head, d, e, tgt_vocab, p, self.tgt_emb)

        def forward(self, b):
            B, S, T = b['B'], b['S'], b['T']
            x = F.dropout(self.src_emb(b['src']), p, self.training)
            packed = nn.utils.rnn.pack_padded_sequence(x, b['src_len'], batch_first=True, enforce_sorted=False)
            enc, _ = self.encoder(packed)
            enc, _ = nn.utils.rnn.pad_packed_sequence(enc, batch_first=True, total_length=S)  # [B, S, A]
            src_mask = (torch.arange(S)[None, :] < b['src_len'][:, None]).float()
            mean = (enc * src_mask[:, :, None]).sum(1) / src_mask.sum(1, keepdim=True)
            s = torch.tanh(self.init(mean))
            keys = self.Ua(enc)  # [B, S, att]
            masked_add = (src_mask - 1) * 1e9
            emb = F.dropout(self.tgt_emb(b['tgt_in']), p, self.training)  # [B, T, e]
            if 'counts' in b:
                return self.packed_decoder(b, s, enc, keys, masked_add, emb)
            states, contexts = [], []
            for t in range(T):
                energy = torch.tanh(keys + self.Wa(s)[:, None, :])
                alpha = torch.softmax(self.v(energy).squeeze(2) + masked_add, dim=1)
                c = torch.bmm(alpha[:, None, :], enc).squeeze(1)
                s = self.cell(torch.cat([emb[:, t], c], 1), s)
                states.append(s)
                contexts.append(c)
            f = torch.tanh(self.out(torch.cat([torch.stack(states, 1), torch.stack(contexts, 1), emb], 2)))
            f = F.dropout(f, p, self.training).reshape(B * T, d)
            logits = self.head(f)
            nll = F.cross_entropy(logits, b['tgt_out'].reshape(-1), reduction='none')
            return (nll * b['mask'].reshape(-1)).sum() / b['tokens']

        def packed_decoder(self, b, s, enc, keys, masked_add, emb):
            # Step t runs the counts[t] sentences not yet finished (rows sorted longest first).
            states, contexts, inputs = [], [], []
            for t, n in enumerate(b['counts']):
                s = s[:n]
                energy = torch.tanh(keys[:n] + self.Wa(s)[:, None, :])
                alpha = torch.softmax(self.v(energy).squeeze(2) + masked_add[:n], dim=1)
                c = torch.bmm(alpha[:, None, :], enc[:n]).squeeze(1)
                s = self.cell(torch.cat([emb[:n, t], c], 1), s)
                states.append(s)
                contexts.append(c)
                inputs.append(emb[:n, t])
            f = torch.tanh(self.out(torch.cat([torch.cat(states), torch.cat(contexts), torch.cat(inputs)], 1)))
            logits = self.head(F.dropout(f, p, self.training))
            nll = F.cross_entropy(logits, b['tgt_out'], reduction='none')
            return (nll * b['mask']).sum() / b['tokens']

    return RnnAttn()


def main(build=build):
    """Times training steps of the model `build` makes (bench/peer/convs2s.py passes its own)."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--batches')
    ap.add_argument('--decode-server', action='store_true',
                    help='serve decode requests on stdin/stdout for bench/decode-speed.ts instead of timing training')
    ap.add_argument('--head', default='learned')
    ap.add_argument('--steps', type=int, default=20)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--config', default='{"embedding":256,"hidden":512,"encoderHidden":256,"attention":512,"output":512,"dropout":0.2}')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--targets', choices=['padded', 'packed'], default='padded',
                    help='padded: the decoder runs every row at every step; packed: finished sentences drop out')
    ap.add_argument('--gemm-peak', action='store_true',
                    help='after the steps, also time large square torch.mm products (the GEMM peak)')
    a = ap.parse_args()

    import torch
    from torch import nn
    torch.set_num_threads(a.threads)
    if a.decode_server:
        from rnn_attn_decode import decode_server
        return decode_server(torch, nn, build, loaded_blas)
    if not a.batches:
        raise SystemExit('--batches is required (or --decode-server)')
    torch.manual_seed(a.seed)
    src_vocab, tgt_vocab, batches = read_batches(a.batches)
    if a.targets == 'packed':
        # A model that packs its own way (bench/peer/transformer.py) brings its own packer.
        pack = getattr(build, 'pack_targets', pack_targets)
        batches = [pack(torch, b) for b in batches]
    cfg = json.loads(a.config)
    model = build(torch, nn, src_vocab, tgt_vocab, a.head, cfg)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    # The architecture's recipe (bench/train-speed.ts passes it in the config): clipping, Adam's β.
    clip_norm = cfg.get('clipNorm', 5.0)
    opt = torch.optim.Adam(params, lr=1e-3, betas=tuple(cfg.get('adamBetas', (0.9, 0.999))))

    def step(i):
        b = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = model(b)
        loss.backward()
        if clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        opt.step()
        return float(loss), b['tokens']

    for i in range(a.warmup):
        step(i)
    times, tokens, losses = [], [], []
    cpu0 = time.process_time()
    for i in range(a.warmup, a.warmup + a.steps):
        t0 = time.perf_counter()
        loss, n = step(i)
        times.append(time.perf_counter() - t0)
        tokens.append(n)
        losses.append(loss)
    cpu = time.process_time() - cpu0
    frozen = sum(b.numel() for b in model.buffers())
    peak = {'gemmPeak': gemm_peak(torch)} if a.gemm_peak else {}
    print(json.dumps({
        'side': 'pytorch',
        'head': a.head,
        'targets': a.targets,
        'torch': torch.__version__,
        'threads': torch.get_num_threads(),
        'blas': loaded_blas(),
        'blasConfig': next((l.strip() for l in torch.__config__.show().splitlines() if 'BLAS_INFO' in l), ''),
        **blas_kernels(torch),
        **peak,
        'openblasEnv': {k: v for k, v in os.environ.items() if k.startswith('OPENBLAS_')},
        'learnable': sum(p.numel() for p in params),
        'frozen': frozen,
        'stepSeconds': times,
        'tokens': tokens,
        'losses': losses,
        'cpuSeconds': cpu,
        'peakRssBytes': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        **getattr(build, 'report', {}),  # what a peer adds of its own (bench/peer/lightconv.py: its conv path)
    }))


if __name__ == '__main__':
    sys.exit(main())
