#!/usr/bin/python3
"""
CTranslate2 peer of bench/decode-speed.ts (`npm run bench:decode -- --arch transformer`): frost's own
Transformer weights, written as a CTranslate2 model through `ctranslate2.specs`, decoding the same
source ids with the same search to the same output length as frost's runtime.

    LD_LIBRARY_PATH=/path/to/ctranslate2/lib /usr/bin/python3 bench/peer/ctranslate2_decode.py

It needs the `ctranslate2` Python module (`pip install ctranslate2`, or built from its source); when
`import ctranslate2` fails it answers every request with {"unavailable": reason}, and the bench
skips it with that reason. CT2_VERBOSE=1 (set by the bench) makes CTranslate2 log its CPU, ISA and
GEMM backends (float32, int8) to stderr.

Weights: the bench writes the model's parameters as a frost checkpoint (train/checkpoint.ts:
`checkpoint.json` with names, shapes and offsets, `tensors.bin` float32), the `params` folder of each
model request: beside the exported ONNX graphs for a model built from initialisation, or the run's own
checkpoint for a run or an imported model (bench/decode-run.ts). The checkpoint rather than the ONNX
initializers: it holds frost's parameters under their own names and in float32 whatever the export's
precision, so one mapping serves fp32 and int8 (CTranslate2 quantises on load), and reading it takes
numpy alone (no onnx module). The mapping (frost's models/archs/transformer-weights.ts to
ctranslate2/specs/transformer_spec.py):
  embeddings    encoder/embedding (decoder/embedding when the vocabulary is joint) and
                decoder/embedding, scaled by sqrt(d) (scale_embeddings) unless embeddingScale is 'none'
  positions     sinusoidal (frost's and Marian's layout) or sinusoidal-fairseq: frost's own table
                (models/layers/positional-encoding.ts), given explicitly (position_encodings.encodings);
                learned: frost's table
  attention     frost's x W + b with W [d_in, d_out]; CTranslate2's Linear is W^T [d_out, d_in].
                Self-attention: linear[0] = [Wq; Wk; Wv] fused, linear[1] = Wo. Attention over the
                source: linear[0] = Wq, linear[1] = [Wk; Wv], linear[2] = Wo
  layer norms   ln1 -> self_attention.layer_norm, ln2 -> attention.layer_norm (decoder) or
                ffn.layer_norm (encoder), ln3 -> ffn.layer_norm (decoder); pre_norm as frost's
                `norm`, and with norm=pre encoder/norm and decoder/norm end the stacks; layernormEmbedding
                -> layernorm_embedding; epsilon 1e-5
  feed-forward  W1, b1 -> ffn.linear_0; W2, b2 -> ffn.linear_1 (relu, exact gelu or swish)
  head          `learned` (logits = f W + b): decoder.projection = W^T, b; `tied` (logits = f E^T + b, the
                head of imported Marian and fairseq models): decoder.projection = the target embedding E,
                unscaled, and the head's bias where it has one. Other heads are refused (a fixed head would
                map as its frozen matrix, which is not written here)

Protocol: one JSON object per line on stdin, one JSON answer per line on stdout (as rnn_attn_decode.py).
  {"cmd": "info"} -> {"ctranslate2": version, "computeTypes": [...], ...}
  {"cmd": "model", "key": K, "dir": model folder, "params": checkpoint folder, "config": archConfig, "head": H,
   "tokens": {"source": [...], "target": [...]}, "specials": {"pad": 0, "unk": 1, "bos": 2, "eos": 3},
   "computeTypes": ["float32"] | ["int8", "int8_float32"], "threads": n}
      writes DIR/ctranslate2 (once per checkpoint) and loads one Translator per compute type (intra_threads n,
      inter_threads 1); compute types that resolve to the same one are loaded once. Answers the resolved
      types.
  {"cmd": "decode", "key": K, "chunks": [[[ids...], ...], ...], "beam": k, "tokens": n}
      translates each chunk (one batch) with exactly n decoder steps (min = max decoding length n; </s>
      is never emitted, as frost's runtime masks it until its forced last step) with every loaded
      compute type in turn; answers {"ms": the fastest type's total, "byType": {type: ms}}.
  {"cmd": "hypotheses", "key": K, "sources": [[ids...], ...], "beam": k, "tokens": n}
      the `k` hypotheses of each source (one batch), n tokens each, as target ids, from the first compute
      type: what the bench compares with frost's before timing.
<pad> and <s> are suppressed (suppress_sequences) and <unk> disabled (disable_unk), as frost's search
masks them. Each hypothesis comes with its score (return_scores), as frost's translations do: without
it CTranslate2's greedy search skips the log-softmax over the vocabulary and returns tokens only. Token strings cross the boundary (translate_batch takes tokens, not ids); the bench's ids
are turned into strings before the clock starts.
"""
import json
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # the peers import each other; leave no __pycache__ in the tree
from rnn_attn import loaded_blas  # noqa: E402

# frost's LAYER_NORM_EPS (models/layers/layer-norm.ts).
LAYER_NORM_EPS = 1e-5
# Rows of the sinusoidal table given to CTranslate2 (frost's has no limit): the longest source or output.
SINUSOID_ROWS = 1024


def load_params(folder):
    """A frost checkpoint (train/checkpoint.ts) in `folder` as {name: float32 array}."""
    with open(os.path.join(folder, 'checkpoint.json')) as f:
        manifest = json.load(f)
    if manifest.get('format') != 'frost-checkpoint':
        raise ValueError(f'{folder}/checkpoint.json is not a frost checkpoint')
    flat = np.fromfile(os.path.join(folder, 'tensors.bin'), dtype='<f4')
    if flat.nbytes != manifest['bytes']:
        raise ValueError(f'{folder}/tensors.bin has {flat.nbytes} bytes, the manifest says {manifest["bytes"]}')
    return {t['name']: flat[t['offset']:t['offset'] + t['length']].reshape(t['shape']) for t in manifest['tensors']}


def sinusoids(rows, d, kind='sinusoidal'):
    """frost's sinusoidal positions (models/layers/positional-encoding.ts), float32 as its graphs compute them:
    its own frequencies from position 0, or fairseq's (step log(10000) / (d/2 - 1)) from position 2."""
    half = d // 2
    if kind == 'sinusoidal-fairseq':
        step = np.float32(np.log(10000.0) / (half - 1))
        omega = np.exp(np.arange(half, dtype=np.float32) * -step).astype(np.float32)
        first = 2
    else:
        omega = np.power(10000.0, -2.0 * np.arange(half) / d).astype(np.float32)
        first = 0
    angles = np.arange(first, first + rows, dtype=np.float32)[:, None] * omega[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], 1).astype(np.float32)


def set_linear(spec, weight, bias):
    """frost's x W + b (W [in, out]) as CTranslate2's Linear (weight [out, in])."""
    spec.weight = np.ascontiguousarray(weight.T)
    spec.bias = np.ascontiguousarray(bias)


def set_attention(spec, t, name, self_attention):
    W = {p: t[f'{name}/W{p}'] for p in 'qkvo'}
    b = {p: t[f'{name}/b{p}'] for p in 'qkvo'}
    if self_attention:
        set_linear(spec.linear[0], np.concatenate([W['q'], W['k'], W['v']], 1), np.concatenate([b['q'], b['k'], b['v']]))
    else:
        set_linear(spec.linear[0], W['q'], b['q'])
        set_linear(spec.linear[1], np.concatenate([W['k'], W['v']], 1), np.concatenate([b['k'], b['v']]))
    set_linear(spec.linear[-1], W['o'], b['o'])


def set_layer_norm(spec, t, name):
    spec.gamma = t[f'{name}/gamma']
    spec.beta = t[f'{name}/beta']


def set_ffn(spec, t, name, ln):
    set_layer_norm(spec.layer_norm, t, ln)
    set_linear(spec.linear_0, t[f'{name}/W1'], t[f'{name}/b1'])
    set_linear(spec.linear_1, t[f'{name}/W2'], t[f'{name}/b2'])


def set_positions(spec, t, name, cfg):
    if cfg['positions'] == 'learned':
        spec.encodings = t[f'{name}/table']
    else:
        spec.encodings = sinusoids(max(SINUSOID_ROWS, cfg['maxPositions']), cfg['model'], cfg['positions'])


def transformer_spec(ct2, t, cfg, head, tokens, specials):
    """A TransformerSpec holding frost's Transformer (models/archs/transformer.ts) with a `learned` or `tied` head."""
    from ctranslate2.specs import common_spec, transformer_spec as ts

    if head not in ('learned', 'tied'):
        raise ValueError(f"head '{head}': only 'learned' and 'tied' (a projection with bias) are mapped to CTranslate2")
    activation = {'relu': common_spec.Activation.RELU, 'gelu': common_spec.Activation.GELU,
                  'swish': common_spec.Activation.SWISH}[cfg['activation']]
    pre = cfg['norm'] == 'pre'
    spec = ts.TransformerSpec.from_config((cfg['encoderLayers'], cfg['decoderLayers']), cfg['heads'],
                                          pre_norm=pre, activation=activation,
                                          layernorm_embedding=bool(cfg.get('layernormEmbedding')))
    enc, dec = spec.encoder, spec.decoder
    joint = 'encoder/embedding' not in t
    enc.embeddings[0].weight = t['decoder/embedding' if joint else 'encoder/embedding']
    dec.embeddings.weight = t['decoder/embedding']
    enc.scale_embeddings = dec.scale_embeddings = cfg.get('embeddingScale', 'sqrt-d') == 'sqrt-d'
    if cfg.get('layernormEmbedding'):
        set_layer_norm(enc.layernorm_embedding, t, 'encoder/embedding_norm')
        set_layer_norm(dec.layernorm_embedding, t, 'decoder/embedding_norm')
    set_positions(enc.position_encodings, t, 'encoder/positions', cfg)
    set_positions(dec.position_encodings, t, 'decoder/positions', cfg)
    for l, layer in enumerate(enc.layer):
        n = f'encoder/layer{l}'
        set_attention(layer.self_attention, t, f'{n}/self', True)
        set_layer_norm(layer.self_attention.layer_norm, t, f'{n}/ln1')
        set_ffn(layer.ffn, t, f'{n}/ff', f'{n}/ln2')
    for l, layer in enumerate(dec.layer):
        n = f'decoder/layer{l}'
        set_attention(layer.self_attention, t, f'{n}/self', True)
        set_layer_norm(layer.self_attention.layer_norm, t, f'{n}/ln1')
        set_attention(layer.attention, t, f'{n}/cross', False)
        set_layer_norm(layer.attention.layer_norm, t, f'{n}/ln2')
        set_ffn(layer.ffn, t, f'{n}/ff', f'{n}/ln3')
    if pre:
        set_layer_norm(enc.layer_norm, t, 'encoder/norm')
        set_layer_norm(dec.layer_norm, t, 'decoder/norm')
    if head == 'learned':
        set_linear(dec.projection, t['head/W'], t['head/b'])
    else:
        E = t['decoder/embedding']
        dec.projection.weight = E
        dec.projection.bias = t.get('head/b', np.zeros(E.shape[0], np.float32))
    spec.register_source_vocabulary(tokens['source'])
    spec.register_target_vocabulary(tokens['target'])
    target = tokens['target']
    spec.config.unk_token = target[specials['unk']]
    spec.config.bos_token = target[specials['bos']]
    spec.config.eos_token = target[specials['eos']]
    spec.config.decoder_start_token = target[specials['bos']]
    spec.config.layer_norm_epsilon = LAYER_NORM_EPS
    return spec


class Peer:
    def __init__(self, ct2):
        self.ct2 = ct2
        self.models = {}
        self.written = {}

    def info(self, _req):
        ct2 = self.ct2
        return {'ctranslate2': ct2.__version__, 'device': 'cpu',
                'computeTypes': sorted(ct2.get_supported_compute_types('cpu'))}

    def model(self, req):
        # One float32 CTranslate2 model per parameter set, whatever precisions of it are timed.
        out = self.written.get(req['params'])
        if out is None:
            out = os.path.join(req['dir'], 'ctranslate2')
            spec = transformer_spec(self.ct2, load_params(req['params']), req['config'], req['head'], req['tokens'],
                                    req['specials'])
            spec.validate()
            spec.optimize(quantization=None)  # float32 on disk; each Translator quantises on load
            os.makedirs(out, exist_ok=True)
            spec.save(out)
            self.written[req['params']] = out
        translators = {}
        for ct in req['computeTypes']:
            tr = self.ct2.Translator(out, device='cpu', compute_type=ct, inter_threads=1, intra_threads=req['threads'])
            if tr.compute_type not in translators:
                translators[tr.compute_type] = tr
        sp, target = req['specials'], req['tokens']['target']
        self.models[req['key']] = {
            'translators': translators,
            'source': req['tokens']['source'],
            'target': {tok: i for i, tok in enumerate(target)},
            'suppress': [[target[sp['pad']]], [target[sp['bos']]]],
        }
        # The BLAS and OpenMP libraries are mapped once a model is loaded (CT2_VERBOSE logs which GEMM backends).
        return {'computeTypes': list(translators), 'blas': loaded_blas()}

    def translate(self, m, tr, batch, beam, tokens, hypotheses=1):
        return tr.translate_batch(batch, beam_size=beam, num_hypotheses=hypotheses, max_batch_size=0,
                                  min_decoding_length=tokens, max_decoding_length=tokens, disable_unk=True,
                                  suppress_sequences=m['suppress'], max_input_length=0, return_scores=True)

    def decode(self, req):
        m = self.models[req['key']]
        batches = [[[m['source'][i] for i in src] for src in chunk] for chunk in req['chunks']]
        by_type = {}
        for ct, tr in m['translators'].items():
            t0 = time.perf_counter()
            for batch in batches:
                self.translate(m, tr, batch, req['beam'], req['tokens'])
            by_type[ct] = (time.perf_counter() - t0) * 1000
        return {'ms': min(by_type.values()), 'byType': by_type}

    def hypotheses(self, req):
        m = self.models[req['key']]
        tr = next(iter(m['translators'].values()))
        batch = [[m['source'][i] for i in src] for src in req['sources']]
        results = self.translate(m, tr, batch, req['beam'], req['tokens'], hypotheses=req['beam'])
        return {'hypotheses': [[[m['target'][tok] for tok in h] for h in r.hypotheses] for r in results]}


def serve(peer, unavailable=None):
    """Answers the protocol's requests on stdin with `peer`'s methods; with `unavailable`, every one with that reason."""
    for line in sys.stdin:
        req = json.loads(line)
        if unavailable:
            reply = {'unavailable': unavailable}
        else:
            handler = getattr(peer, req['cmd'], None) if req['cmd'] in ('info', 'model', 'decode', 'hypotheses') else None
            try:
                reply = handler(req) if handler else {'error': f"unknown cmd {req['cmd']!r}"}
            except Exception as err:
                reply = {'error': f'{type(err).__name__}: {err}'}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()
    return 0


def main():
    try:
        import ctranslate2
    except Exception as err:  # ImportError, or the module's library missing (OSError)
        return serve(None, f'import ctranslate2 failed: {type(err).__name__}: {err}')
    return serve(Peer(ctranslate2))


if __name__ == '__main__':
    sys.exit(main())
