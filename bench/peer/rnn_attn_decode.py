"""
Decoding peer of bench/decode-speed.ts: the PyTorch rnn-attn model of rnn_attn.py (same
architecture, sizes and head) decoding the same source ids, with the same search, to the same output
lengths as frost's runtime, written the way PyTorch inference code is written (eval mode,
torch.inference_mode, nn.GRU over packed sources, GRUCell steps, index_select to follow beams).

    /usr/bin/python3 bench/peer/rnn_attn.py --decode-server --threads 2

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout.
  {"cmd": "model", "key": K, "head": H, "srcVocab": n, "tgtVocab": n, "config": {...}, "int8": bool}
      builds (and keeps under K) a model; int8 applies torch's dynamic quantiser
      (torch.ao.quantization.quantize_dynamic on Linear, GRU and GRUCell: int8 weights, activations
      quantised per call), PyTorch's own counterpart of onnxruntime's dynamic quantisation.
  {"cmd": "decode", "key": K, "chunks": [[[ids...], ...], ...], "steps": [n, ...], "beam": k,
   "specials": {"pad": 0, "bos": 2, "eos": 3}}
      decodes each chunk (one batch of sources) for exactly steps[i] decoder steps (</s> is masked
      until the last step, which frost's runtime forces too) and answers {"ms": total}.
Weights are the model's seeded initialisation, not frost's: decoding time does not depend on the
values, and forcing the output lengths makes both sides run the same steps on the same rows.
"""
import json
import sys
import time


def encode(torch, nn, model, src, src_len):
    F = nn.functional
    S = src.shape[1]
    packed = nn.utils.rnn.pack_padded_sequence(model.src_emb(src), src_len, batch_first=True, enforce_sorted=False)
    enc, _ = model.encoder(packed)
    enc, _ = nn.utils.rnn.pad_packed_sequence(enc, batch_first=True, total_length=S)
    src_mask = (torch.arange(S)[None, :] < src_len[:, None]).float()
    mean = (enc * src_mask[:, :, None]).sum(1) / src_mask.sum(1, keepdim=True)
    s = torch.tanh(model.init(mean))
    return s, enc, model.Ua(enc), (src_mask - 1) * 1e9, F


def step(torch, F, model, s, y, enc, keys, masked_add):
    e = model.tgt_emb(y)
    energy = torch.tanh(keys + model.Wa(s)[:, None, :])
    alpha = torch.softmax(model.v(energy).squeeze(2) + masked_add, dim=1)
    c = torch.bmm(alpha[:, None, :], enc).squeeze(1)
    s = model.cell(torch.cat([e, c], 1), s)
    f = torch.tanh(model.out(torch.cat([s, c, e], 1)))
    return F.log_softmax(model.head(f), dim=1), s


def decode_chunk(torch, nn, model, sources, steps, beam, sp):
    B = len(sources)
    S = max(1, max(len(x) for x in sources))
    src = torch.full((B, S), sp['pad'], dtype=torch.int64)
    for b, x in enumerate(sources):
        src[b, :len(x)] = torch.tensor(x, dtype=torch.int64)
    src_len = torch.tensor([max(1, len(x)) for x in sources], dtype=torch.int64)
    s, enc, keys, masked_add, F = encode(torch, nn, model, src, src_len)
    y = torch.full((B,), sp['bos'], dtype=torch.int64)
    banned = [sp['pad'], sp['bos']]
    scores = None
    history = torch.zeros((B, 0), dtype=torch.int64)
    for t in range(steps):
        lp, s = step(torch, F, model, s, y, enc, keys, masked_add)
        lp[:, banned] = float('-inf')
        if t < steps - 1:
            lp[:, sp['eos']] = float('-inf')
        if beam == 1:
            y = lp.argmax(1)
            history = torch.cat([history, y[:, None]], 1)
            continue
        V = lp.shape[1]
        if scores is None:
            # First step: one row per sentence becomes `beam` rows.
            top, idx = lp.topk(beam, dim=1)
            rows = torch.arange(B).repeat_interleave(beam)
            enc, keys, masked_add = enc[rows], keys[rows], masked_add[rows]
            s, history = s[rows], history[rows]
            scores, y = top.reshape(-1), idx.reshape(-1)
        else:
            total = (lp + scores[:, None]).view(B, beam * V)
            top, idx = total.topk(beam, dim=1)
            rows = (torch.arange(B)[:, None] * beam + torch.div(idx, V, rounding_mode='floor')).reshape(-1)
            s, history = s.index_select(0, rows), history.index_select(0, rows)
            scores, y = top.reshape(-1), (idx % V).reshape(-1)
        history = torch.cat([history, y[:, None]], 1)
    return history


def decode_server(torch, nn, build, loaded_blas):
    models = {}
    for line in sys.stdin:
        req = json.loads(line)
        if req['cmd'] == 'model':
            model = build(torch, nn, req['srcVocab'], req['tgtVocab'], req['head'], req['config'])
            model.eval()
            if req.get('int8'):
                # Debian's torch has no fbgemm; qnnpack is its int8 CPU engine.
                if torch.backends.quantized.engine == 'none' and 'qnnpack' in torch.backends.quantized.supported_engines:
                    torch.backends.quantized.engine = 'qnnpack'
                model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear, nn.GRU, nn.GRUCell}, dtype=torch.qint8)
            models[req['key']] = model
            reply = {'ok': True, 'torch': torch.__version__, 'threads': torch.get_num_threads(), 'blas': loaded_blas(),
                     'quantizedEngine': torch.backends.quantized.engine}
        elif req['cmd'] == 'decode':
            model = models[req['key']]
            t0 = time.perf_counter()
            with torch.inference_mode():
                for sources, steps in zip(req['chunks'], req['steps']):
                    decode_chunk(torch, nn, model, sources, steps, req['beam'], req['specials'])
            reply = {'ms': (time.perf_counter() - t0) * 1000}
        else:
            reply = {'error': f"unknown cmd {req['cmd']!r}"}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()
    return 0
