/**
 * The `hadamard` head's scoring in onnxruntime-node: the structured graph (scatter + Kronecker-
 * factored Sylvester transform, models/heads/hadamard-onnx.ts) against a dense Gemm with the same
 * [|V|, d] matrix stored, at batch 1 and batch 64. Prints per-batch time, the ratio dense /
 * structured (> 1: structured is faster), file sizes and the largest score difference.
 *
 *   node --import tsx bench/hadamard-head.ts [--vocab 6000] [--dim 512] [--threads 1]
 */
import { parseArgs } from 'node:util';
import { ort } from '../core/runtime/ort-node.ts';
import { chooseHadamardColumns, hadamardOrder, hadamardRows } from '../core/hadamard.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { hadamardFactors, hadamardScoresOnnx } from '../models/heads/hadamard-onnx.ts';
import { createTimed, medianRunMs } from './onnx-timing.ts';

const { values: args } = parseArgs({
  options: {
    vocab: { type: 'string', default: '6000' },
    dim: { type: 'string', default: '512' },
    threads: { type: 'string', default: '1' },
    seed: { type: 'string', default: '1' },
  },
});
const V = Number(args.vocab);
const d = Number(args.dim);
const threads = Number(args.threads);
const n = hadamardOrder(V, d);
const columns = chooseHadamardColumns(n, d, Number(args.seed));

/** scores [N, |V|] for unit vectors u [N, d]: the part of the head the two graphs differ in. */
function scoresGraph(structured: boolean, maxFactor?: number): Uint8Array {
  const g = new GraphBuilder(`hadamard-${structured ? 'structured' : 'dense'}`);
  const u = g.input('u', 'float32', ['N', d]);
  const scores = g.scope('head', () =>
    structured
      ? hadamardScoresOnnx(g, u, { rows: V, order: n, columns, maxFactor })
      : g.op(
          'Gemm',
          [u, g.initializer('targets', { dtype: 'float32', dims: [V, d], data: hadamardRows(V, columns) })],
          { transB: 1 },
        ),
  );
  g.output(scores, 'scores', 'float32', ['N', V]);
  return g.toBytes();
}

const denseBytes = scoresGraph(false);
const structuredBytes = scoresGraph(true);
const dense = await createTimed(denseBytes, threads);
const structured = await createTimed(structuredBytes, threads);
console.log(
  `|V| = ${V}, d = ${d}, n = ${n} = ${hadamardFactors(n).join(' x ')}, onnxruntime-node ${ort.env.versions.common}, ${threads} intra-op thread(s)`,
);
console.log(`file: dense ${denseBytes.length} bytes, structured ${structuredBytes.length} bytes\n`);
console.log('batch   dense (ms)   structured (ms)   dense / structured   max |Δscore|');
for (const N of [1, 64]) {
  const u = new Float32Array(N * d).map((_, i) => Math.sin(i * 0.37 + 1));
  for (let r = 0; r < N; r++) {
    const row = u.subarray(r * d, (r + 1) * d);
    const norm = Math.hypot(...row);
    for (let k = 0; k < d; k++) row[k] /= norm;
  }
  const feeds = { u: new ort.Tensor('float32', u, [N, d]) };
  const a = (await dense.session.run(feeds)).scores!.data as Float32Array;
  const b = (await structured.session.run(feeds)).scores!.data as Float32Array;
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
  const [tDense, tStructured] = await medianRunMs([dense.session, structured.session], feeds, {
    rounds: 9,
    runs: N === 1 ? 200 : 20,
    warmup: 10,
  });
  console.log(
    `${String(N).padStart(5)}  ${tDense!.toFixed(3).padStart(11)}  ${tStructured!.toFixed(3).padStart(16)}  ${(tDense! / tStructured!).toFixed(2).padStart(19)}   ${maxDiff.toExponential(1)}`,
  );
}
await dense.session.release();
await structured.session.release();
