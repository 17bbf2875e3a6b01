/**
 * Issue #41: three questions about onnxruntime-node's CPU kernels that decided how the Transformer's step graph is
 * written, each as small graphs timed side by side (1 intra-op thread, medians of interleaved rounds, wall µs per
 * `session.run`):
 *
 *  - scores: one query row per row and head, q [rows, h, 1, d/h] against keys [rows, h, L, d/h], as MatMul(q, kᵀ)
 *    alone, with the 1/√(d/h) as a Mul after it (onnxruntime folds it into the MatMul's alpha), and as a Mul on q
 *    before it (folded the same way). Why the export folds the scale into the query weights instead.
 *  - top-k: each row's top 16 of [rows, 8,000] by one TopK, against a blocked form (the maxima of blocks of b, the
 *    16 best blocks, the top 16 of their values), which gives the same values and indices, ties by lower index too.
 *  - fetches: whether a run that fetches only a cheap output skips an expensive node beside it.
 *
 *   node --import tsx bench/investigations/step-kernels.ts [--rows 64] [--reps 200]
 */
import { parseArgs } from 'node:util';
import type { InferenceSession, Tensor } from 'onnxruntime-common';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import { median } from '../whole-rows-compare.ts';

const { values: args } = parseArgs({
  options: { rows: { type: 'string', default: '64' }, reps: { type: 'string', default: '200' } },
});
const R = Number(args.rows);
const reps = Number(args.reps);
const [H, L, D, V, K] = [4, 24, 64, 8000, 16];

/** Deterministic values in [-0.1, 0.1]; `ties` rounds them to steps of 0.01 so that rows hold equal values. */
function values(n: number, ties = false): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const x = (Math.sin(i * 12.9898) * 43758.5453) % 1;
    a[i] = ties ? Math.round(x * 10) / 100 : x / 10;
  }
  return a;
}

function scoresGraph(form: 'alpha 1' | 'Mul after' | 'Mul on q'): GraphBuilder {
  const g = new GraphBuilder(`scores ${form}`, { opset: 18 });
  const q = g.input('q', 'float32', [R, H, 1, D]);
  const k = g.input('k', 'float32', [R, H, L, D]);
  const kT = g.op('Transpose', [k], { perm: [0, 1, 3, 2] });
  const scale = () => g.constFloat(1 / Math.sqrt(D));
  const y =
    form === 'alpha 1'
      ? g.op('MatMul', [q, kT])
      : form === 'Mul after'
        ? g.op('Mul', [g.op('MatMul', [q, kT]), scale()])
        : g.op('MatMul', [g.op('Mul', [q, scale()]), kT]);
  g.output(y, 'y', 'float32', [R, H, 1, L]);
  return g;
}

function topKGraph(block: number | null): GraphBuilder {
  const g = new GraphBuilder(block ? `top-k blocks of ${block}` : 'TopK', { opset: 18 });
  const x = g.input('x', 'float32', [R, V]);
  const k = g.constInt64([K]);
  const topK = (t: string, largest = 1) => g.node('TopK', [t, k], { axis: 1, largest, sorted: 1 }, { outputs: 2 });
  if (block === null) {
    const [v, i] = topK(x);
    g.output(v!, 'v', 'float32', [R, K]);
    g.output(i!, 'i', 'int64', [R, K]);
    return g;
  }
  const view = g.op('Reshape', [x, g.constInt64([0, V / block, block])]);
  const [, best] = topK(g.reduce('ReduceMax', view, [2], false));
  // The chosen blocks in index order, so that the last TopK breaks ties by the lower index as one TopK does.
  const [, order] = topK(best!, 0);
  const blocks = g.op('GatherElements', [best!, order!], { axis: 1 });
  const at = g.op('Expand', [g.unsqueeze(blocks, [2]), g.constInt64([1, 1, block])]);
  const candidates = g.op('Reshape', [g.op('GatherElements', [view, at], { axis: 1 }), g.constInt64([0, K * block])]);
  const [v, p] = topK(candidates);
  const b = g.constInt64(block);
  const chosen = g.op('GatherElements', [blocks, g.op('Div', [p!, b])], { axis: 1 });
  g.output(v!, 'v', 'float32', [R, K]);
  g.output(g.op('Add', [g.op('Mul', [chosen, b]), g.op('Mod', [p!, b])]), 'i', 'int64', [R, K]);
  return g;
}

function fetchGraph(): GraphBuilder {
  const g = new GraphBuilder('fetches', { opset: 18 });
  const x = g.input('x', 'float32', [R, 1024]);
  const W = g.initializer('W', { dtype: 'float32', dims: [1024, V], data: values(1024 * V) });
  g.output(g.op('MatMul', [x, W]), 'big', 'float32', [R, V]);
  g.output(g.op('Relu', [x]), 'small', 'float32', [R, 1024]);
  return g;
}

interface Variant {
  name: string;
  session: InferenceSession;
  /** Output names to fetch; all of them when empty. */
  fetches?: string[];
}

const run = (v: Variant, feeds: Record<string, Tensor>) =>
  v.fetches ? v.session.run(feeds, v.fetches) : v.session.run(feeds);

/** Median wall µs per run of each variant over interleaved rounds. */
async function time(variants: Variant[], feeds: Record<string, Tensor>): Promise<number[]> {
  const rounds: number[][] = variants.map(() => []);
  for (let r = 0; r < 7; r++) {
    for (const [i, v] of variants.entries()) {
      for (let w = 0; w < 3; w++) await run(v, feeds);
      const t0 = performance.now();
      for (let j = 0; j < reps; j++) await run(v, feeds);
      rounds[i]!.push(((performance.now() - t0) / reps) * 1000);
    }
  }
  return rounds.map(median);
}

const open = (g: GraphBuilder) => createNodeSession(g.toBytes(), { intraOpNumThreads: 1 });
const tensor = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);

async function report(title: string, variants: Variant[], feeds: Record<string, Tensor>): Promise<void> {
  const us = await time(variants, feeds);
  const cells = variants.map((v, i) => `${v.name} ${us[i]!.toFixed(0)} µs (${(us[0]! / us[i]!).toFixed(2)}×)`);
  console.log(`| ${title} | ${cells.join(' | ')} |`);
  for (const session of new Set(variants.map((v) => v.session))) await session.release();
}

console.log(`rows ${R}, ${reps} runs a round, 7 rounds; ratios against the first column (above 1: faster)`);
const scoreForms = ['Mul after', 'Mul on q', 'alpha 1'] as const;
await report(
  `scores [${R}·${H}] × [1 × ${D}]·[${D} × ${L}]`,
  await Promise.all(scoreForms.map(async (f) => ({ name: f, session: await open(scoresGraph(f)) }))),
  { q: tensor(values(R * H * D), [R, H, 1, D]), k: tensor(values(R * H * L * D), [R, H, L, D]) },
);

const topFeeds = { x: tensor(values(R * V, true), [R, V]) };
const topVariants: Variant[] = [];
for (const b of [null, 16, 32, 40])
  topVariants.push({ name: b ? `blocks of ${b}` : 'TopK', session: await open(topKGraph(b)) });
const reference = await topVariants[0]!.session.run(topFeeds);
for (const v of topVariants.slice(1)) {
  const out = await v.session.run(topFeeds);
  const same = (n: string) => String(out[n]!.data) === String(reference[n]!.data);
  if (!same('v') || !same('i')) throw new Error(`${v.name}: not TopK's values and indices`);
}
await report(`top ${K} of [${R}, ${V}] (same values and indices)`, topVariants, topFeeds);

const fetch = await open(fetchGraph());
const fetchFeeds = { x: tensor(values(R * 1024), [R, 1024]) };
await report(
  'an unfetched MatMul beside a fetched Relu',
  [
    { name: 'fetch both', session: fetch, fetches: ['big', 'small'] },
    { name: 'fetch Relu only', session: fetch, fetches: ['small'] },
  ],
  fetchFeeds,
);
