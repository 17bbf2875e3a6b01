import * as tf from '@tensorflow/tfjs-core';

/**
 * Sum over rows of mask_i · (logsumexp(z_i) - z_i[y_i]): log-softmax and cross-entropy in one op with
 * a hand-written gradient, mask_i · (softmax(z_i) - onehot(y_i)). Autodiff through logSoftmax + gather
 * would keep an [N, |V|] log-probability tensor and take several passes over it; the vocabulary
 * dimension is the largest in the model.
 *
 * The forward pass keeps softmax(z) for the gradient (in place of z, so no more memory), and the
 * gradient needs no second exponential of the [N, |V|] logits; logsumexp(z) = max z − log max
 * softmax(z), so the forward pass needs no exponential besides the softmax's either. (A one-pass
 * JS kernel for all of it was tried on wasm and lost to these ops: XNNPACK's passes run ≈ 0.3 ns an
 * element and its softmax ≈ 2, a JS loop over the heap 1-2 ns before any maths.)
 */
export function maskedCrossEntropySum(logits: tf.Tensor2D, targets: tf.Tensor1D, mask: tf.Tensor1D): tf.Scalar {
  const [N, V] = logits.shape;
  const fn = tf.customGrad(((z: tf.Tensor, save: tf.GradSaveFunc) => {
    // One softmax kernel (vectorised on wasm: XNNPACK) instead of exp, sum and div; logsumexp
    // follows from it exactly: the largest logit's probability is 1/Σexp(z − max), never below 1/|V|.
    const probs = tf.softmax(z);
    const lse = tf.sub(tf.max(z, 1), tf.log(tf.max(probs, 1)));
    const flatIndex = tf.add(tf.mul(tf.range(0, N, 1, 'int32'), tf.scalar(V, 'int32')), targets);
    const picked = tf.gather(tf.reshape(z, [-1]), flatIndex);
    const value = tf.sum(tf.mul(tf.sub(lse, picked), mask)) as tf.Scalar;
    // Saved, not closed over: the caller's tidy() disposes targets and mask before backprop runs.
    save([probs, targets, mask]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [p, ys, ms] = saved;
        const diff = tf.sub(p, tf.oneHot(ys as tf.Tensor1D, V, 1, 0, 'float32'));
        return tf.mul(diff, tf.reshape(tf.mul(ms, dy), [N, 1]));
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(logits) as tf.Scalar;
}
