import * as tf from '@tensorflow/tfjs-core';

/**
 * Kernels a backend may register to run the loss in one pass over the logits (frost registers both
 * for wasm: train/backend/kernels/softmax-xent.ts). Without them the same maths runs as tfjs ops.
 *  - SOFTMAX_XENT_KERNEL: inputs { logits [N, V] float32, labels [N] int32 }; outputs
 *    [nll [N] = logsumexp(z_i) − z_i[y_i], probs [N, V] = softmax(z_i)].
 *  - SOFTMAX_XENT_GRAD_KERNEL: inputs { probs [N, V], labels [N] int32, scale [N] }; output
 *    [N, V] = scale_i · (probs_i − onehot(y_i)).
 */
export const SOFTMAX_XENT_KERNEL = 'FrostSoftmaxCrossEntropy';
export const SOFTMAX_XENT_GRAD_KERNEL = 'FrostSoftmaxCrossEntropyGrad';

function fusedKernels(): boolean {
  const backend = tf.getBackend();
  return tf.getKernel(SOFTMAX_XENT_KERNEL, backend) != null && tf.getKernel(SOFTMAX_XENT_GRAD_KERNEL, backend) != null;
}

/**
 * Sum over rows of mask_i · (logsumexp(z_i) - z_i[y_i]): log-softmax and cross-entropy in one op with
 * a hand-written gradient, mask_i · (softmax(z_i) - onehot(y_i)). Autodiff through logSoftmax + gather
 * would keep an [N, |V|] log-probability tensor and take several passes over it; the vocabulary
 * dimension is the largest in the model. The forward pass keeps softmax(z) for the gradient (instead
 * of z, so no more memory), which then needs no second exponential of the logits.
 */
export function maskedCrossEntropySum(logits: tf.Tensor2D, targets: tf.Tensor1D, mask: tf.Tensor1D): tf.Scalar {
  const [N, V] = logits.shape;
  const fused = fusedKernels();
  const fn = tf.customGrad(((z: tf.Tensor, save: tf.GradSaveFunc) => {
    let nll: tf.Tensor;
    let probs: tf.Tensor;
    if (fused) {
      [nll, probs] = tf.engine().runKernel(SOFTMAX_XENT_KERNEL, { logits: z, labels: targets }) as tf.Tensor[];
    } else {
      const max = tf.max(z, 1, true);
      const e = tf.exp(tf.sub(z, max));
      const s = tf.sum(e, 1, true);
      probs = tf.div(e, s);
      const lse = tf.reshape(tf.add(tf.log(s), max), [N]);
      const flatIndex = tf.add(tf.mul(tf.range(0, N, 1, 'int32'), tf.scalar(V, 'int32')), targets);
      nll = tf.sub(lse, tf.gather(tf.reshape(z, [-1]), flatIndex));
    }
    const value = tf.sum(tf.mul(nll, mask)) as tf.Scalar;
    // Saved, not closed over: the caller's tidy() disposes targets and mask before backprop runs.
    save([probs, targets, mask]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [p, ys, ms] = saved;
        const scale = tf.mul(ms, dy);
        if (fused) return tf.engine().runKernel(SOFTMAX_XENT_GRAD_KERNEL, { probs: p, labels: ys, scale }) as tf.Tensor;
        return tf.mul(tf.sub(p, tf.oneHot(ys as tf.Tensor1D, V)), tf.reshape(scale, [N, 1]));
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(logits) as tf.Scalar;
}
