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

/**
 * A compact output layer: the head is built (by `build`) on the K kept targets only, so its logits are [N, K]
 * and the excluded ids cost no work, then widened to [N, |V|] with every excluded logit exactly
 * {@link EXCLUDED_LOGIT}: the K columns padded by one pinned column, then gathered into vocabulary order. The
 * loss, the decoders and the runtimes keep seeing [N, |V|] logits, so nothing downstream changes.
 *
 * Why: a joint subword vocabulary's output layer (Multi30k de-en, joint 8k) otherwise multiplies f by all 8,000
 * rows to pin the 3,730 the targets never use (output-mask.ts), about a quarter of a `small` rnn-attn's work.
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
  // Each kept column lands in exactly one place, so z's gradient is dy's kept columns: one gather, where the
  // gather's own gradient would be a scatter-add over [N, |V|].
  const widen = tf.customGrad(((z: tf.Tensor) => ({
    value: tf.gather(
      tf.pad(
        z,
        [
          [0, 0],
          [0, 1],
        ],
        EXCLUDED_LOGIT,
      ),
      spreadIndex,
      1,
    ),
    gradFunc: (dy: tf.Tensor) => tf.gather(dy, keptIndex, 1),
  })) as unknown as Parameters<typeof tf.customGrad>[0]);
  return {
    ...head,
    rowIds: kept,
    logits: (f, training) => tf.tidy(() => widen(head.logits(f, training)) as tf.Tensor2D),
    toOnnx: (g, f, onnx) => {
      const padded = g.op('Pad', [head.toOnnx(g, f, onnx), g.constInt64([0, 0, 0, 1]), g.constFloat(EXCLUDED_LOGIT)]);
      return g.op(
        'Gather',
        [padded, g.initializer('output_columns', { dtype: 'int64', dims: [V], data: Array.from(spread) })],
        {
          axis: 1,
        },
      );
    },
    describe: () => ({ ...head.describe(), compactOutput: { rows: K, vocabulary: V } }),
  };
}
