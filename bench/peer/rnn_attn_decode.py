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
      until the last step, which emits it, as frost's runtime does; `search`, which
      transformer_decode.py shares) and answers {"ms": total}.
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


def search(torch, B, steps, beam, sp, step, expand, follow):
    """
    Greedy (beam 1) or beam search over B sentences for exactly `steps` decoder steps, as frost's core/decode does
    with minLen = maxLen: <pad> and <s> are never emitted, </s> is masked until the last step, which emits it.
    step(y) runs the model on the previous tokens y [rows] and returns log-probabilities [rows, |V|];
    expand(rows) makes each sentence's one row `beam` rows (first beam step), follow(rows) reorders rows after
    each later beam step. Returns the tokens before </s> [B * beam, steps - 1] and, for beam search, their
    cumulative log-probabilities [B * beam] (each sentence's rows sorted best first), else None.
    """
    y = torch.full((B,), sp['bos'], dtype=torch.int64)
    banned = [sp['pad'], sp['bos']]
    scores = None
    history = torch.zeros((B, 0), dtype=torch.int64)
    for t in range(steps):
        lp = step(y)
        lp[:, banned] = float('-inf')
        if t < steps - 1:
            lp[:, sp['eos']] = float('-inf')
        else:
            # The forced </s>: only its log-probability counts.
            eos = lp[:, sp['eos']].clone()
            lp.fill_(float('-inf'))
            lp[:, sp['eos']] = eos
        if beam == 1:
            y = lp.argmax(1)
            history = torch.cat([history, y[:, None]], 1)
            continue
        V = lp.shape[1]
        if scores is None:
            # First step: one row per sentence becomes `beam` rows.
            top, idx = lp.topk(beam, dim=1)
            rows = torch.arange(B).repeat_interleave(beam)
            expand(rows)
            history = history[rows]
            scores, y = top.reshape(-1), idx.reshape(-1)
        else:
            total = (lp + scores[:, None]).view(B, beam * V)
            top, idx = total.topk(beam, dim=1)
            rows = (torch.arange(B)[:, None] * beam + torch.div(idx, V, rounding_mode='floor')).reshape(-1)
            follow(rows)
            history = history.index_select(0, rows)
            scores, y = top.reshape(-1), (idx % V).reshape(-1)
        history = torch.cat([history, y[:, None]], 1)
    return history[:, :-1], scores


def source_batch(torch, sources, pad):
    """Sources [B, S] padded with <pad> (an empty one as one <pad>, as frost's runtime) and their lengths [B]."""
    B = len(sources)
    S = max(1, max(len(x) for x in sources))
    src = torch.full((B, S), pad, dtype=torch.int64)
    for b, x in enumerate(sources):
        src[b, :len(x)] = torch.tensor(x, dtype=torch.int64)
    return src, torch.tensor([max(1, len(x)) for x in sources], dtype=torch.int64)


def decode_chunk(torch, nn, model, sources, steps, beam, sp):
    s, enc, keys, masked_add, F = encode(torch, nn, model, *source_batch(torch, sources, sp['pad']))
    state = {'s': s, 'enc': enc, 'keys': keys, 'masked_add': masked_add}

    def run(y):
        lp, state['s'] = step(torch, F, model, state['s'], y, state['enc'], state['keys'], state['masked_add'])
        return lp

    def expand(rows):
        for name in state:
            state[name] = state[name][rows]

    def follow(rows):
        # Only the decoder state moves: the encoder's outputs are the same for every row of a sentence.
        state['s'] = state['s'].index_select(0, rows)

    return search(torch, len(sources), steps, beam, sp, run, expand, follow)[0]


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
