import * as tf from '@tensorflow/tfjs-core';

/**
 * Sum over rows of mask_i · (logsumexp(z_i) - z_i[y_i]): log-softmax and cross-entropy in one op with
 * a hand-written gradient, mask_i · (softmax(z_i) - onehot(y_i)). Autodiff through logSoftmax + gather
 * would keep an [N, |V|] log-probability tensor and take several passes over it; the vocabulary
 * dimension is the largest in the model.
 */
export function maskedCrossEntropySum(logits: tf.Tensor2D, targets: tf.Tensor1D, mask: tf.Tensor1D): tf.Scalar {
  const [N, V] = logits.shape;
  const fn = tf.customGrad(((z: tf.Tensor, save: tf.GradSaveFunc) => {
    const lse = tf.logSumExp(z, 1);
    const flatIndex = tf.add(tf.mul(tf.range(0, N, 1, 'int32'), tf.scalar(V, 'int32')), targets);
    const picked = tf.gather(tf.reshape(z, [-1]), flatIndex);
    const value = tf.sum(tf.mul(tf.sub(lse, picked), mask)) as tf.Scalar;
    // Saved, not closed over: the caller's tidy() disposes targets and mask before backprop runs.
    save([z, lse, targets, mask]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [zs, lses, ys, ms] = saved;
        const probs = tf.exp(tf.sub(zs, tf.reshape(lses, [N, 1])));
        const diff = tf.sub(probs, tf.oneHot(ys as tf.Tensor1D, V));
        return tf.mul(diff, tf.reshape(tf.mul(ms, dy), [N, 1]));
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(logits) as tf.Scalar;
}
