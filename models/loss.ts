import * as tf from '@tensorflow/tfjs-core';
import { runFused } from './layers/fused.ts';

/**
 * Sum over rows of mask_i · (logsumexp(z_i) - z_i[y_i]): log-softmax and cross-entropy in one op with
 * a hand-written gradient, mask_i · (softmax(z_i) - onehot(y_i)). Autodiff through logSoftmax + gather
 * would keep an [N, |V|] log-probability tensor and take several passes over it; the vocabulary
 * dimension is the largest in the model.
 *
 * The forward pass keeps softmax(z) for the gradient (in place of z, so no more memory), and the
 * gradient needs no second exponential of the [N, |V|] logits. frost's wasm kernels
 * (train/backend/kernels/softmax-xent.ts) take the value from the saved probabilities, one read
 * per row, and make the gradient in one SIMD pass instead of three.
 */
export function maskedCrossEntropySum(logits: tf.Tensor2D, targets: tf.Tensor1D, mask: tf.Tensor1D): tf.Scalar {
  const fn = tf.customGrad(((z: tf.Tensor, save: tf.GradSaveFunc) => {
    const inputs = { logits: z, targets, mask };
    const [value, probs] = runFused(SOFTMAX_XENT_KERNEL, inputs, () => softmaxCrossEntropyOps(inputs));
    // Saved, not closed over: the caller's tidy() disposes targets and mask before backprop runs.
    save([probs, targets, mask]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, [p, ys, ms]: tf.Tensor[]) => {
        const gradInputs = { probs: p, targets: ys, mask: ms, dy };
        return runFused(SOFTMAX_XENT_GRAD_KERNEL, gradInputs, () => softmaxCrossEntropyGradOps(gradInputs))[0];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(logits) as tf.Scalar;
}

/**
 * The loss as a kernel contract (a backend may register either; frost registers both for wasm:
 * train/backend/kernels/softmax-xent.ts):
 *
 *   FrostSoftmaxXent      inputs  logits [N, |V|], targets int32 [N], mask [N]
 *                         outputs value [] = Σ_i mask_i (logsumexp(z_i) − z_i[y_i]), probs [N, |V|]
 *   FrostSoftmaxXentGrad  inputs  probs, targets, mask, dy []
 *                         outputs dlogits [N, |V|] = dy · mask_i (probs_i − onehot(y_i))
 */
export const SOFTMAX_XENT_KERNEL = 'FrostSoftmaxXent';
export const SOFTMAX_XENT_GRAD_KERNEL = 'FrostSoftmaxXentGrad';

/** FrostSoftmaxXent as tfjs ops. */
export function softmaxCrossEntropyOps({ logits: z, targets, mask }: tf.NamedTensorMap): tf.Tensor[] {
  const [N, V] = z.shape as [number, number];
  // One softmax kernel (vectorised on wasm: XNNPACK) instead of exp, sum and div; logsumexp
  // follows from it exactly: the largest logit's probability is 1/Σexp(z − max), never below 1/|V|.
  const probs = tf.softmax(z);
  const lse = tf.sub(tf.max(z, 1), tf.log(tf.max(probs, 1)));
  const flatIndex = tf.add(tf.mul(tf.range(0, N, 1, 'int32'), tf.scalar(V, 'int32')), targets);
  const picked = tf.gather(tf.reshape(z, [-1]), flatIndex);
  return [tf.sum(tf.mul(tf.sub(lse, picked), mask)), probs];
}

/** FrostSoftmaxXentGrad as tfjs ops. */
export function softmaxCrossEntropyGradOps({ probs, targets, mask, dy }: tf.NamedTensorMap): tf.Tensor[] {
  const [N, V] = probs.shape as [number, number];
  const diff = tf.sub(probs, tf.oneHot(targets as tf.Tensor1D, V, 1, 0, 'float32'));
  return [tf.mul(diff, tf.reshape(tf.mul(mask, dy), [N, 1]))];
}
