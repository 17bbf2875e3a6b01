import * as tf from '@tensorflow/tfjs-core';
import { EXCLUDED_LOGIT } from './output-mask.ts';
import type { HeadContext, OutputHead } from './types.ts';

/**
 * The ids of a |V|-entry vocabulary that are not in `excluded`, ascending.
 * @throws RangeError for an excluded id outside the vocabulary
 */
export function keptTargets(V: number, excluded: readonly number[]): Int32Array {
  const out = new Uint8Array(V);
  for (const id of excluded) {
    if (!Number.isInteger(id) || id < 0 || id >= V) {
      throw new RangeError(`excluded target id ${id} is outside the vocabulary of ${V}`);
    }
    out[id] = 1;
  }
  const kept: number[] = [];
  for (let id = 0; id < V; id++) if (out[id] === 0) kept.push(id);
  return Int32Array.from(kept);
}

/** Pads z [N, K] with one column on the right: the pinned column the excluded ids are gathered from. */
const ONE_MORE_COLUMN: [number, number][] = [
  [0, 0],
  [0, 1],
];

/**
 * A compact output layer: the head is built (by `build`) on the K kept targets only, so its logits are [N, K]
 * and the excluded ids cost no work, then widened to [N, |V|] with every excluded logit exactly
 * {@link EXCLUDED_LOGIT} (in tfjs, the K columns and one pinned column gathered into vocabulary order; in ONNX, a
 * scatter into a pinned block). The decoders and the runtimes keep seeing [N, |V|] logits; the training loss takes
 * the [N, K] ones (`trainingScores`).
 *
 * Why: a joint subword vocabulary's output layer (Multi30k de-en, joint 8k) otherwise multiplies f by all 8,000
 * rows to pin the 3,858 the targets never use (output-mask.ts): 18% of a `small` rnn-attn training step
 * (docs/subwords.md, bench/compact-output.ts).
 *
 * The head's parameters have K rows (a learned W [d, K], a bias [K]); heads that score against the target
 * embedding score its kept rows (target-rows.ts), and frozen heads generate a K-row matrix from their seed or
 * structure, which is a different (equally random or structured) matrix from the |V|-row one of a masked run.
 */
export function compactHead(ctx: HeadContext, build: (compact: HeadContext) => OutputHead): OutputHead {
  const V = ctx.vocabSize;
  const kept = keptTargets(V, ctx.excludedTargets ?? []);
  const K = kept.length;
  const head = build({ ...ctx, vocabSize: K, rowIds: kept, excludedTargets: undefined, compactOutput: undefined });
  // Column of each vocabulary id in [z | pinned]: its row among the kept, or K, the pinned column.
  const spread = new Int32Array(V).fill(K);
  for (const [k, id] of kept.entries()) spread[id] = k;
  const spreadIndex = ctx.params.auxiliary(tf.tensor1d(spread, 'int32'));
  const keptIndex = ctx.params.auxiliary(tf.tensor1d(kept, 'int32'));
  // A training target's column: its row among the kept. The excluded never occur in the training targets (that is
  // why they are excluded) but as padding, whose zero weight ignores the column it is given.
  const targetColumns = spread.map((k) => (k === K ? 0 : k));
  const columns = ctx.params.auxiliary(tf.tensor1d(targetColumns, 'int32'));
  // Each kept column lands in exactly one place, so z's gradient is dy's kept columns: one gather, where the
  // gather's own gradient would be a scatter-add over [N, |V|].
  const widen = tf.customGrad(((z: tf.Tensor) => ({
    value: tf.gather(tf.pad(z, ONE_MORE_COLUMN, EXCLUDED_LOGIT), spreadIndex, 1),
    gradFunc: (dy: tf.Tensor) => tf.gather(dy, keptIndex, 1),
  })) as unknown as Parameters<typeof tf.customGrad>[0]);
  return {
    ...head,
    rowIds: kept,
    logits: (f, training) => tf.tidy(() => widen(head.logits(f, training)) as tf.Tensor2D),
    trainingScores: (f, targets, training) => ({
      logits: head.logits(f, training),
      targets: tf.gather(columns, targets) as tf.Tensor1D,
    }),
    toOnnx: (g, f, onnx) => {
      // An [N, |V|] block of EXCLUDED_LOGIT with z scattered into the kept columns. Measured with onnxruntime
      // (1 thread, d = 512, 4,271 of 8,000 kept): 4.1 ms at N = 64 and 0.34 ms at N = 5, where Pad + Gather on
      // axis 1 took 6.7 and 0.58 (its gather copies one float at a time), and the masked layer 5.8 and 0.66.
      const z = head.toOnnx(g, f, onnx);
      const rowsBy1 = g.op('Concat', [g.slice(g.op('Shape', [z]), [0], [1]), g.constInt64([1])], { axis: 0 });
      const pinned = g.initializer('excluded', {
        dtype: 'float32',
        dims: [1, V],
        data: new Float32Array(V).fill(EXCLUDED_LOGIT),
      });
      const keptIds = g.initializer('kept_ids', { dtype: 'int64', dims: [1, K], data: Array.from(kept) });
      return g.op('ScatterElements', [g.op('Expand', [pinned, rowsBy1]), g.op('Expand', [keptIds, rowsBy1]), z], {
        axis: 1,
      });
    },
    describe: () => ({ ...head.describe(), compactOutput: { rows: K, vocabulary: V } }),
  };
}
