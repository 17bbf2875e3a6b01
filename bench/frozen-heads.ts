/**
 * Does onnxruntime-node fold the seeded-matrix subgraph at session creation? For the fixed-uniform
 * and fixed-l2 heads' scoring (Gemm(f, W, transB=1)), compares the graph that regenerates W from its
 * stream key with the one that stores W: file size, session creation time, per-run time at batch 1
 * and 64 (their ratio should be ≈ 1 if the subgraph was folded, ≫ 1 if it ran every time), and
 * which op types are left in the optimised graph.
 *
 *   node --import tsx bench/frozen-heads.ts [--vocab 6000] [--dim 512] [--threads 1]
 */
import { parseArgs } from 'node:util';
import { ort } from '../core/runtime/ort-node.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { l2NormaliseRows, streamKey, uniformMatrix } from '../core/random.ts';
import { l2NormaliseRowsOnnx, seededUniformMatrixOnnx } from '../models/heads/seeded-matrix-onnx.ts';
import { optimizedOpTypes } from '../test/helpers/ort-optimized.ts';
import { createTimed, medianRunMs } from './onnx-timing.ts';

const { values: args } = parseArgs({
  options: {
    vocab: { type: 'string', default: '6000' },
    dim: { type: 'string', default: '512' },
    threads: { type: 'string', default: '1' },
  },
});
const V = Number(args.vocab);
const d = Number(args.dim);
const threads = Number(args.threads);

/** logits = f Wᵀ with W either stored or regenerated. */
function headGraph(head: 'fixed-uniform' | 'fixed-l2', stored: boolean): Uint8Array {
  const g = new GraphBuilder(`${head}-${stored ? 'stored' : 'seeded'}`);
  const f = g.input('f', 'float32', ['N', d]);
  const key = streamKey(1, head);
  const [lo, hi] = head === 'fixed-uniform' ? [-10, 10] : [-1, 1];
  const W = g.scope('head', () => {
    if (stored) {
      const raw = uniformMatrix(key, V, d, lo, hi);
      const data = head === 'fixed-l2' ? l2NormaliseRows(raw, V, d) : raw;
      return g.initializer('targets', { dtype: 'float32', dims: [V, d], data });
    }
    const m = seededUniformMatrixOnnx(g, { key, rows: V, cols: d, lo, hi });
    return head === 'fixed-l2' ? l2NormaliseRowsOnnx(g, m, d) : m;
  });
  g.output(g.op('Gemm', [f, W], { transB: 1 }), 'logits', 'float32', ['N', V]);
  return g.toBytes();
}

const GENERATOR_OPS = new Set([
  'Range',
  'Cast',
  'Mul',
  'BitwiseXor',
  'BitShift',
  'Add',
  'Reshape',
  'CumSum',
  'Slice',
  'Sqrt',
  'Div',
]);

console.log(`|V| = ${V}, d = ${d}, onnxruntime-node ${ort.env.versions.common}, ${threads} intra-op thread(s)\n`);
console.log(
  'head           file stored → seeded (bytes)   create stored / seeded (ms)   batch  run stored  run seeded  seeded/stored  ops left after folding',
);
for (const head of ['fixed-uniform', 'fixed-l2'] as const) {
  const storedBytes = headGraph(head, true);
  const seededBytes = headGraph(head, false);
  const stored = await createTimed(storedBytes, threads);
  const seeded = await createTimed(seededBytes, threads);
  const left = (await optimizedOpTypes(seededBytes)).filter((op) => GENERATOR_OPS.has(op));
  for (const N of [1, 64]) {
    const f = new Float32Array(N * d).map((_, i) => Math.sin(i * 0.37));
    const feeds = { f: new ort.Tensor('float32', f, [N, d]) };
    const [a, b] = await medianRunMs([stored.session, seeded.session], feeds, {
      rounds: 7,
      runs: N === 1 ? 100 : 20,
      warmup: 5,
    });
    console.log(
      `${head.padEnd(14)} ${String(storedBytes.length).padStart(9)} → ${String(seededBytes.length).padEnd(8)}       ` +
        `${stored.createMs.toFixed(0).padStart(6)} / ${seeded.createMs.toFixed(0).padEnd(6)}            ` +
        `${String(N).padStart(5)}  ${a!.toFixed(3).padStart(10)}  ${b!.toFixed(3).padStart(10)}  ${(b! / a!).toFixed(2).padStart(13)}  ` +
        `${left.length === 0 ? 'none (folded)' : left.join(',')}`,
    );
  }
  await stored.session.release();
  await seeded.session.release();
}
