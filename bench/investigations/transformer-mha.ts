/**
 * Issue #41: would onnxruntime's contrib ops com.microsoft `MultiHeadAttention` or `DecoderMaskedMultiHeadAttention`
 * (CPU kernels, node only: not in onnxruntime-web) make the Transformer's decoder step faster than frost's own
 * attention ops? One-block graphs at the `small` shape (d 256, 4 heads, source 20), one query position per row, each
 * from the decoder input h [rows, d] through the query projection, the attention and the output projection:
 *
 *  - cross: A = multi-head-attention.ts's step cross-attention (attendStepOnnx over cross_k/cross_v [rows, h, S, d/h]
 *    with the source mask's bias); B = one MultiHeadAttention node with those keys and values fed as 4-D BNSH
 *    `key`/`value` (the kernel's cross-attention form: no `bias` input then) and the mask either as `attention_bias`
 *    [rows, 1, 1, S] (`B bias`) or as an int32 `key_padding_mask` [rows, S] (`B kpm`); `B dmmha` the same with
 *    DecoderMaskedMultiHeadAttention; `C` frost's ops with Mul + ReduceSum for the batched MatMuls.
 *  - self: A = attendStepAppendOnnx over an append cache [rows, h, capacity, d/h] (capacity as append-cache.ts
 *    grows it, unfilled positions masked) plus the new position; B = one MultiHeadAttention node with the new
 *    position's key and value as `key`/`value` [rows, 1, d] and the cache as `past_key`/`past_value`, the unfilled
 *    positions masked by `attention_bias` [1, 1, 1, capacity + 1]; its `present_key` is a graph output (without it
 *    the kernel ignores the past) left unfetched; `B dmmha` DecoderMaskedMultiHeadAttention on the shared buffer.
 *  - `P` in both: the projections alone (A − P is the attention's own cost).
 *  - residual LN: LN(x + y) as layer-norm.ts's ops, as LayerNormalization, as SkipLayerNormalization.
 *  - head tail: logits [rows, |V| 8,000] to each row's top 16 log-probabilities. A = graph-spec.ts's
 *    emitStepLogProbs (LogSoftmax, then TopK); B = TopK over the logits less ReduceLogSumExp; C = the same with the
 *    log-sum-exp written as ReduceMax, Exp, ReduceSum, Log. B and C keep a `log_probs` output (logits − lse), left
 *    unfetched: onnxruntime 1.30 still runs it (it runs every node whatever a run fetches: a graph's unfetched
 *    [64, 1024]·[1024, 8000] MatMul took its full time beside a fetched Relu), as a step graph would.
 *
 * frost's query projection comes scaled by 1/√(d/h) (multi-head-attention.ts), so the contrib nodes get `scale: 1`.
 * Both graphs of a pair get the same inputs; the script checks their outputs agree, then times them alternately
 * (process CPU time of one `session.run`, 1 intra-op thread), `--reps` each, and prints min and median.
 *
 *   node --import tsx bench/investigations/transformer-mha.ts [--rows 64,80] [--positions 10,20] [--reps 300]
 *   PROFILE=1 node --import tsx bench/investigations/transformer-mha.ts   # onnxruntime's per-node kernel times
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs-core';
import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { CACHE_CHUNK } from '../../core/runtime/append-cache.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import type { TransformerModel } from '../../models/archs/transformer.ts';
import { buildModel, resolveArchConfig } from '../../models/index.ts';
import { LAYER_NORM_EPS, layerNormOnnx, type LayerNormWeights } from '../../models/layers/layer-norm.ts';
import {
  attendStepAppendOnnx,
  attendStepOnnx,
  keyPaddingBiasOnnx,
  projectStepHeadsOnnx,
  type MultiHeadAttentionWeights,
} from '../../models/layers/multi-head-attention.ts';
import { tensorValue } from '../../models/onnx-values.ts';
import { DECODER_TOP_K, emitStepLogProbs, TOP_LOG_PROBS } from '../../models/archs/graph-spec.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '64,80' },
    positions: { type: 'string', default: '10,20' },
    reps: { type: 'string', default: '300' },
  },
});
const reps = Number(args.reps);
const S = 20;
const model = buildModel(
  'transformer',
  resolveArchConfig('transformer', 'small'),
  { srcVocab: 8000, tgtVocab: 8000 },
  { name: 'learned' },
  1,
) as TransformerModel;
const layer = model.w.decoder[0]!;
const { d, heads } = layer.cross;
const dk = d / heads;
const MS = 'com.microsoft';

// ---- graphs ------------------------------------------------------------------

function graph(name: string): GraphBuilder {
  return new GraphBuilder(name, { opset: 18, domains: { [MS]: 1 } });
}

/** [rows, d] → [rows, h, 1, d/h] → [rows, 1, d]: the query layout MultiHeadAttention takes. */
function rowsOfOne(g: GraphBuilder, x: string): string {
  return g.op('Reshape', [x, g.constInt64([0, 1, d])]);
}

/** MultiHeadAttention's output [rows, 1, d] through the output projection to [rows, d]. */
function outProjection(g: GraphBuilder, w: MultiHeadAttentionWeights, y: string): string {
  const merged = g.op('Reshape', [y, g.constInt64([0, d])]);
  return g.op('Add', [
    g.op('MatMul', [merged, g.initializer(`${w.name}/Wo`, tensorValue(w.Wo))]),
    g.initializer(`${w.name}/bo`, tensorValue(w.bo)),
  ]);
}

/**
 * `C`: the same attention without batched MatMuls: one query position's scores q·k are a broadcast Mul and a
 * ReduceSum over d/h, its context Σ p·v a Mul and a ReduceSum over the source (plain ONNX, so web-compatible too).
 */
function crossC(): GraphBuilder {
  const g = graph('cross-elementwise');
  const w = layer.cross;
  const i = crossInputs(g);
  const q = projectStepHeadsOnnx(g, w, 'q', i.h);
  const scores = g.op('Mul', [
    g.reduce('ReduceSum', g.op('Mul', [q, i.k]), [3], true),
    g.constFloat(1 / Math.sqrt(dk)),
  ]);
  const bias = g.op('Reshape', [keyPaddingBiasOnnx(g, i.mask), g.constInt64([0, 1, -1, 1])]);
  const p = g.op('Softmax', [g.op('Add', [scores, bias])], { axis: 2 });
  const context = g.reduce('ReduceSum', g.op('Mul', [p, i.v]), [2], true);
  g.output(outProjection(g, w, g.op('Reshape', [context, g.constInt64([0, 1, d])])), 'y', 'float32', ['rows', d]);
  return g;
}

/** A block's input h [rows, d] and the keys and values `<kind>_k`, `<kind>_v` [rows, h, `length`, d/h]. */
function blockInputs(g: GraphBuilder, kind: string, length: string) {
  const dims = ['rows', heads, length, dk];
  return {
    h: g.input('h', 'float32', ['rows', d]),
    k: g.input(`${kind}_k`, 'float32', dims),
    v: g.input(`${kind}_v`, 'float32', dims),
  };
}

function crossInputs(g: GraphBuilder) {
  return { ...blockInputs(g, 'cross', 'src_len'), mask: g.input('src_mask', 'float32', ['rows', 'src_len']) };
}

function crossA(): GraphBuilder {
  const g = graph('cross-frost');
  const w = layer.cross;
  const i = crossInputs(g);
  const y = attendStepOnnx(g, w, projectStepHeadsOnnx(g, w, 'q', i.h), i.k, i.v, keyPaddingBiasOnnx(g, i.mask));
  g.output(y, 'y', 'float32', ['rows', d]);
  return g;
}

function crossB(mask: 'bias' | 'kpm' | 'dmmha'): GraphBuilder {
  const g = graph(`cross-mha-${mask}`);
  const w = layer.cross;
  const i = crossInputs(g);
  const q = rowsOfOne(g, projectStepHeadsOnnx(g, w, 'q', i.h));
  const inputs =
    mask === 'bias' ? [q, i.k, i.v, '', '', keyPaddingBiasOnnx(g, i.mask)] : [q, i.k, i.v, g.cast(i.mask, 'int32')];
  // DecoderMaskedMultiHeadAttention's mask is its 4th input (mask_index); MultiHeadAttention's its 5th.
  if (mask === 'kpm') inputs.splice(3, 0, '');
  const op = mask === 'dmmha' ? 'DecoderMaskedMultiHeadAttention' : 'MultiHeadAttention';
  const y = g.op(op, inputs, { num_heads: heads, scale: 1 }, { domain: MS });
  g.output(outProjection(g, w, y), 'y', 'float32', ['rows', d]);
  return g;
}

function selfInputs(g: GraphBuilder) {
  return { ...blockInputs(g, 'self', 'capacity'), len: g.input('cache_len', 'int64', []) };
}

/** -1e9 at the unfilled positions of a cache of `capacity` (the step graph's pastBias), [capacity]. */
function unfilledBias(g: GraphBuilder, pastK: string, len: string): string {
  const capacity = g.op('Gather', [g.op('Shape', [pastK]), g.constInt64(2)]);
  const filled = g.cast(g.op('Less', [g.op('Range', [g.constInt64(0), capacity, g.constInt64(1)]), len]), 'float32');
  return g.op('Sub', [g.op('Mul', [filled, g.constFloat(1e9)]), g.constFloat(1e9)]);
}

type SelfInputs = ReturnType<typeof selfInputs>;

/**
 * A self-attention block: the new position's query, key and value projections, `attend` over the cache and it
 * ([rows, d] after the output projection), and the new key and value as the step returns them.
 */
function selfBlock(
  name: string,
  attend: (g: GraphBuilder, i: SelfInputs, q: string, k: string, v: string) => string,
): GraphBuilder {
  const g = graph(name);
  const i = selfInputs(g);
  const [q, k, v] = (['q', 'k', 'v'] as const).map((p) => projectStepHeadsOnnx(g, layer.self, p, i.h));
  g.output(attend(g, i, q!, k!, v!), 'y', 'float32', ['rows', d]);
  g.output(k!, 'new_k', 'float32', ['rows', heads, 1, dk]);
  g.output(v!, 'new_v', 'float32', ['rows', heads, 1, dk]);
  return g;
}

const selfA = () =>
  selfBlock('self-frost', (g, i, q, k, v) =>
    attendStepAppendOnnx(g, layer.self, q, { keys: i.k, values: i.v, bias: unfilledBias(g, i.k, i.len) }, k, v),
  );

const selfB = () =>
  selfBlock('self-mha', (g, i, q, k, v) => {
    // The cache's positions, then the new one (never masked): [1, 1, 1, capacity + 1].
    const bias = g.unsqueeze(g.op('Concat', [unfilledBias(g, i.k, i.len), g.constFloat([0])], { axis: 0 }), [0, 1, 2]);
    const inputs = [rowsOfOne(g, q), rowsOfOne(g, k), rowsOfOne(g, v), '', '', bias, i.k, i.v];
    const [y, pk] = g.node(
      'MultiHeadAttention',
      inputs,
      { num_heads: heads, scale: 1 },
      {
        domain: MS,
        outputs: 3,
      },
    );
    // onnxruntime 1.30's CPU kernel ignores past_key/past_value unless present_key is an output (then it attends
    // over the new position alone, max |diff| ~3): so the graph returns it, and the step leaves it unfetched.
    g.output(pk!, 'present_k', 'float32', ['rows', heads, 'total', dk]);
    return outProjection(g, layer.self, y!);
  });

/**
 * DecoderMaskedMultiHeadAttention with `past_present_share_buffer`: the cache's capacity is its max_sequence_length,
 * `past_sequence_length` its filled positions; the kernel copies the cache into `present_*` (a graph input's buffer
 * is not reused in place), writes the new position there and attends over the filled ones (no mask needed).
 */
const selfDmmha = () =>
  selfBlock('self-dmmha', (g, i, q, k, v) => {
    const inputs = [rowsOfOne(g, q), rowsOfOne(g, k), rowsOfOne(g, v), '', '', i.k, i.v, g.cast(i.len, 'int32')];
    const [y, pk, pv] = g.node(
      'DecoderMaskedMultiHeadAttention',
      inputs,
      { num_heads: heads, scale: 1, past_present_share_buffer: 1 },
      { domain: MS, outputs: 3 },
    );
    g.output(pk!, 'present_k', 'float32', ['rows', heads, 'capacity', dk]);
    g.output(pv!, 'present_v', 'float32', ['rows', heads, 'capacity', dk]);
    return outProjection(g, layer.self, y!);
  });

/**
 * `P`: the block without its attention (the projections, reshapes and outputs alone, the query standing in for the
 * attention's output), so that A − P is what the attention itself costs; its output is not compared.
 */
function projectionsOnly(self: boolean): GraphBuilder {
  const g = graph(self ? 'self-projections' : 'cross-projections');
  const w = self ? layer.self : layer.cross;
  const i = self ? selfInputs(g) : crossInputs(g);
  g.output(outProjection(g, w, rowsOfOne(g, projectStepHeadsOnnx(g, w, 'q', i.h))), 'y', 'float32', ['rows', d]);
  if (self)
    for (const p of ['k', 'v'] as const)
      g.output(projectStepHeadsOnnx(g, w, p, i.h), `new_${p}`, 'float32', ['rows', heads, 1, dk]);
  return g;
}

/**
 * The post-norm residual LN(x + y) [rows, d] that closes each block of `small`: A = layer-norm.ts's ops
 * (ReduceMean, Sub, Mul, Sqrt, Div, ...); B = the standard LayerNormalization (opset 17, in onnxruntime-web too);
 * B skip = com.microsoft SkipLayerNormalization (the residual Add fused in).
 */
function residualNorm(form: 'A' | 'B' | 'skip'): GraphBuilder {
  const g = graph(`norm-${form}`);
  const x = g.input('x', 'float32', ['rows', d]);
  const y = g.input('y', 'float32', ['rows', d]);
  if (form === 'A') {
    g.output(layerNormOnnx(g, norm, g.op('Add', [x, y])), 'z', 'float32', ['rows', d]);
    return g;
  }
  const [gamma, beta] = [
    g.initializer('gamma', tensorValue(norm.gamma)),
    g.initializer('beta', tensorValue(norm.beta)),
  ];
  const z =
    form === 'B'
      ? g.op('LayerNormalization', [g.op('Add', [x, y]), gamma, beta], { axis: -1, epsilon: LAYER_NORM_EPS })
      : g.op('SkipLayerNormalization', [x, y, gamma, beta], { epsilon: LAYER_NORM_EPS }, { domain: MS });
  g.output(z, 'z', 'float32', ['rows', d]);
  return g;
}

/** The step's vocabulary in the head-tail comparison (the joint BPE vocabulary's 8,000). */
const V = 8000;

/**
 * The head tail from logits [rows, V] to the top-k outputs: `A` as exported (LogSoftmax, then TopK); `B` TopK over the
 * logits less ReduceLogSumExp; `C` the log-sum-exp as max, exp, sum, log.
 */
function headTail(form: 'A' | 'B' | 'C'): GraphBuilder {
  const g = graph(`head-tail-${form}`);
  const logits = g.input('logits', 'float32', ['rows', V]);
  if (form === 'A') {
    emitStepLogProbs(g, logits, V);
    return g;
  }
  let lse: string;
  if (form === 'B') lse = g.reduce('ReduceLogSumExp', logits, [1], true);
  else {
    const max = g.reduce('ReduceMax', logits, [1], true);
    const sum = g.reduce('ReduceSum', g.op('Exp', [g.op('Sub', [logits, max])]), [1], true);
    lse = g.op('Add', [g.op('Log', [sum]), max]);
  }
  g.output(g.op('Sub', [logits, lse]), 'log_probs', 'float32', ['rows', V]);
  // TopK of the logits, shifted by each row's log-sum-exp: the same candidates, as log-probabilities.
  const [top] = g.node('TopK', [logits, g.constInt64([DECODER_TOP_K], [1])], { axis: 1 }, { outputs: 2 });
  g.output(g.op('Sub', [top!, lse]), TOP_LOG_PROBS, 'float32', ['rows', DECODER_TOP_K]);
  return g;
}

// ---- inputs, agreement, timing ---------------------------------------------------

let seed = 12345;
function uniform(n: number, scale = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    a[i] = ((seed / 2 ** 32) * 2 - 1) * scale;
  }
  return a;
}
/** Layer-norm weights that are not the identity, so that agreement checks gamma and beta too. */
const norm: LayerNormWeights = {
  name: 'ln',
  gamma: tf.variable(tf.tensor1d(uniform(d, 0.5).map((x) => 1 + x))),
  beta: tf.variable(tf.tensor1d(uniform(d, 0.5))),
};
const f32 = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);

function crossFeeds(rows: number): Record<string, Tensor> {
  // Source lengths 11…20, so that the mask matters.
  const mask = Float32Array.from({ length: rows * S }, (_, i) => (i % S < S - (((i / S) | 0) % 10) ? 1 : 0));
  return {
    h: f32(uniform(rows * d), [rows, d]),
    cross_k: f32(uniform(rows * d * S, 2), [rows, heads, S, dk]),
    cross_v: f32(uniform(rows * d * S, 2), [rows, heads, S, dk]),
    src_mask: f32(mask, [rows, S]),
  };
}

function selfFeeds(rows: number, position: number): Record<string, Tensor> {
  const capacity = Math.ceil(position / CACHE_CHUNK) * CACHE_CHUNK;
  return {
    h: f32(uniform(rows * d), [rows, d]),
    self_k: f32(uniform(rows * heads * capacity * dk, 2), [rows, heads, capacity, dk]),
    self_v: f32(uniform(rows * heads * capacity * dk, 2), [rows, heads, capacity, dk]),
    cache_len: new ort.Tensor('int64', BigInt64Array.from([BigInt(position)]), []),
  };
}

function maxDiff(a: Record<string, Tensor>, b: Record<string, Tensor>): number {
  let m = 0;
  for (const [name, t] of Object.entries(a)) {
    const x = t.data as Float32Array;
    const y = b[name]!.data as Float32Array;
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]! - y[i]!));
  }
  return m;
}

async function cpuMs(s: InferenceSession, feeds: Record<string, Tensor>, fetch: string[]): Promise<number> {
  const c0 = process.cpuUsage();
  await s.run(feeds, fetch);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

async function compare(
  label: string,
  graphs: [string, GraphBuilder][],
  feeds: Record<string, Tensor>,
  fetch: string[],
) {
  const sessions = await Promise.all(graphs.map(([, g]) => createNodeSession(g.toBytes(), { intraOpNumThreads: 1 })));
  const ref = await sessions[0]!.run(feeds, fetch);
  const diffs = await Promise.all(
    sessions.slice(1).map(async (s, i) => (graphs[i + 1]![0] === 'P' ? NaN : maxDiff(ref, await s.run(feeds, fetch)))),
  );
  const times: number[][] = sessions.map(() => []);
  for (let r = 0; r < reps + 10; r++)
    for (let i = 0; i < sessions.length; i++) {
      const j = (i + r) % sessions.length;
      const ms = await cpuMs(sessions[j]!, feeds, fetch);
      if (r >= 10) times[j]!.push(ms);
    }
  const stats = times.map((t) => {
    const s = [...t].sort((a, b) => a - b);
    return { min: s[0]!, median: s[s.length >> 1]! };
  });
  const cells = graphs.map(
    ([name], i) =>
      `${name} ${(stats[i]!.min * 1000).toFixed(0)} / ${(stats[i]!.median * 1000).toFixed(0)} µs` +
      (i === 0 || name === 'P'
        ? ''
        : ` (A/B ${(stats[0]!.median / stats[i]!.median).toFixed(2)}×, max |diff| ${diffs[i - 1]!.toExponential(1)})`),
  );
  console.log(`| ${label} | ${cells.join(' | ')} |`);
  await Promise.all(sessions.map((s) => s.release()));
}

/** PROFILE=1: onnxruntime's kernel time per node (µs per run of 200, profiled) of A and B, 64 rows, position 20. */
async function profile() {
  const rows = 64;
  const cases: [string, GraphBuilder, Record<string, Tensor>, string[]][] = [
    ['cross A', crossA(), crossFeeds(rows), ['y']],
    ['cross B bias', crossB('bias'), crossFeeds(rows), ['y']],
    ['self A', selfA(), selfFeeds(rows, 20), ['y', 'new_k', 'new_v']],
    ['self B', selfB(), selfFeeds(rows, 20), ['y', 'new_k', 'new_v']],
  ];
  const dir = await mkdtemp(join(tmpdir(), 'frost-mha-'));
  for (const [name, g, feeds, fetch] of cases) {
    const prefix = join(dir, name.replaceAll(' ', '-'));
    const s = await createNodeSession(g.toBytes(), { intraOpNumThreads: 1, profileFilePrefix: prefix });
    for (let r = 0; r < 200; r++) await s.run(feeds, fetch);
    s.endProfiling();
    const file = (await readdir(dir)).find((f) => f.startsWith(name.replaceAll(' ', '-') + '_'))!;
    const events = JSON.parse(await readFile(join(dir, file), 'utf8')) as { cat: string; name: string; dur: number }[];
    const nodes = new Map<string, number>();
    for (const e of events)
      if (e.cat === 'Node' && e.name.endsWith('_kernel_time')) nodes.set(e.name, (nodes.get(e.name) ?? 0) + e.dur);
    console.log(name);
    for (const [k, v] of [...nodes].sort((a, b) => b[1] - a[1]).slice(0, 8))
      console.log(`  ${(v / 200).toFixed(0).padStart(5)} µs  ${k.replace(/_kernel_time$/, '')}`);
    await s.release();
  }
  await rm(dir, { recursive: true, force: true });
}

if (process.env.PROFILE) {
  await profile();
  process.exit(0);
}
console.log(`min / median CPU µs per run, ${reps} interleaved runs each; load ${loadavg()[0]!.toFixed(1)}`);
for (const rows of args.rows.split(',').map(Number)) {
  await compare(
    `cross rows ${rows}`,
    [
      ['A', crossA()],
      ['B bias', crossB('bias')],
      ['B kpm', crossB('kpm')],
      ['B dmmha', crossB('dmmha')],
      ['C', crossC()],
      ['P', projectionsOnly(false)],
    ],
    crossFeeds(rows),
    ['y'],
  );
  for (const position of args.positions.split(',').map(Number))
    await compare(
      `self rows ${rows} position ${position}`,
      [
        ['A', selfA()],
        ['B', selfB()],
        ['B dmmha', selfDmmha()],
        ['P', projectionsOnly(true)],
      ],
      selfFeeds(rows, position),
      ['y', 'new_k', 'new_v'],
    );
}
for (const rows of args.rows.split(',').map(Number))
  await compare(
    `residual LN rows ${rows}`,
    [
      ['A', residualNorm('A')],
      ['B', residualNorm('B')],
      ['B skip', residualNorm('skip')],
    ],
    { x: f32(uniform(rows * d, 2), [rows, d]), y: f32(uniform(rows * d, 2), [rows, d]) },
    ['z'],
  );
for (const rows of args.rows.split(',').map(Number))
  await compare(
    `head tail rows ${rows}`,
    [
      ['A', headTail('A')],
      ['B', headTail('B')],
      ['C', headTail('C')],
    ],
    { logits: f32(uniform(rows * V, 8), [rows, V]) },
    [TOP_LOG_PROBS],
  );
console.log(`load ${loadavg()[0]!.toFixed(1)}`);
