import * as tf from '@tensorflow/tfjs-core';
import type { HeadContext, OutputHead } from './types.ts';

/**
 * The logit offset of an excluded target: far below any real logit (a head's logits stay within tens), so its
 * probability is exactly 0 in float32 and its log-probability never wins a beam, yet finite in float16 exports.
 */
export const EXCLUDED_LOGIT = -1e4;

/**
 * `head` with the logits of `ctx.excludedTargets` pinned to {@link EXCLUDED_LOGIT} in training, and pushed there in
 * the exported graph.
 *
 * Why: a joint subword vocabulary holds thousands of pieces the target language never uses (Multi30k de-en,
 * joint 8k: 3,858 of 8,000 never occur in the English text). Left in the softmax they take probability mass the
 * model must first learn to withdraw: a learned bias needs about log(|V|)/lr Adam steps to do it, and a frozen
 * head without a bias (fixed-l2, fixed-uniform, hadamard) can only point f away from thousands of random rows at
 * once. On the toy corpus 2,000 unused entries took a tied model from 86 to 0.6 validation BLEU after 3 epochs.
 */
export function maskedHead(head: OutputHead, ctx: HeadContext): OutputHead {
  const V = ctx.vocabSize;
  // Training: z · keep + offset, so that an excluded logit is exactly EXCLUDED_LOGIT and its gradient exactly 0.
  // The graph: z + offset, the offsets folded into the head's own bias where it ends in a Gemm with one (no pass over
  // the [N, |V|] logits at all; otherwise one Add). An excluded logit is then z − 10⁴ rather than −10⁴: a probability
  // of 0 in float32 either way, and the export's parity check leaves entries both engines pin that low alone
  // (export/parity.ts). A Mul by the keep row cost a decoder step at opus-mt's 58,101 targets 5% at batch 64.
  const keep = new Float32Array(V).fill(1);
  const offsets = new Float32Array(V);
  for (const id of ctx.excludedTargets ?? []) {
    if (!Number.isInteger(id) || id < 0 || id >= V) {
      throw new RangeError(`excluded target id ${id} is outside the vocabulary of ${V}`);
    }
    keep[id] = 0;
    offsets[id] = EXCLUDED_LOGIT;
  }
  const keepRow = ctx.params.auxiliary(tf.tensor2d(keep, [1, V])) as tf.Tensor2D;
  const offsetRow = ctx.params.auxiliary(tf.tensor2d(offsets, [1, V])) as tf.Tensor2D;
  const row = (data: Float32Array) => ({ dtype: 'float32' as const, dims: [1, V], data });
  return {
    ...head,
    logits: (f, training) => tf.tidy(() => tf.add(tf.mul(head.logits(f, training), keepRow), offsetRow)),
    toOnnx: (g, f, onnx) => {
      const z = head.toOnnx(g, f, onnx);
      return g.addToGemmBias(z, offsets) ?? g.op('Add', [z, g.initializer('excluded', row(offsets))]);
    },
  };
}
