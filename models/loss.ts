import * as tf from '@tensorflow/tfjs-core';
import type { OutputHead } from './heads/types.ts';
import { runFused } from './layers/fused.ts';

/**
 * How the token loss is computed: what a training recipe passes to `Seq2SeqModel.lossSum`, which
 * hands it on to {@link maskedCrossEntropySum}. Absent, the loss is the plain cross-entropy.
 */
export interface TokenLossOptions {
  /**
   * ε of label smoothing, as fairseq's `label_smoothed_cross_entropy`: the target keeps 1 − ε of
   * the probability mass and every other word gets ε / (|V| − 1); padded positions (mask 0) count
   * for nothing. 0: plain cross-entropy. @default 0
   */
  labelSmoothing?: number;
  /**
   * Receives Σ mask_i · NLL_i of every loss computed (the unsmoothed negative log-likelihood), so a
   * trainer can report the NLL beside the smoothed loss as fairseq does.
   */
  onNll?: (nllSum: number) => void;
}

/**
 * Sum over rows of mask_i · loss_i, with loss_i = logsumexp(z_i) − z_i[y_i] (cross-entropy) or,
 * with label smoothing ε and ε' = ε / (|V| − 1),
 *
 *   loss_i = (1 − ε − ε') (logsumexp(z_i) − z_i[y_i]) + ε' Σ_j (logsumexp(z_i) − z_ij)
 *
 * (fairseq's formula: the smoothed target q_i puts 1 − ε on y_i and ε' on every other word), in one
 * op with a hand-written gradient, mask_i · (softmax(z_i) − q_i). Autodiff through logSoftmax +
 * gather would keep an [N, |V|] log-probability tensor and take several passes over it; the
 * vocabulary dimension is the largest in the model.
 *
 * The forward pass keeps softmax(z) for the gradient (in place of z, so no more memory), and the
 * gradient needs no second exponential of the [N, |V|] logits. frost's wasm kernels
 * (train/backend/kernels/softmax-xent.ts) take the value from the saved probabilities, one read
 * per row (plus one row-sum pass over z when smoothing), and make the gradient in one SIMD pass
 * instead of three.
 */
export function maskedCrossEntropySum(
  logits: tf.Tensor2D,
  targets: tf.Tensor1D,
  mask: tf.Tensor1D,
  loss: TokenLossOptions = {},
  /** The caller never reads `logits` again: the kernels may overwrite them (the contract's inPlace). */
  consumesLogits = false,
): tf.Scalar {
  const smoothing = checkSmoothing(loss.labelSmoothing ?? 0, logits.shape[1]);
  const attrs = { smoothing, inPlace: consumesLogits };
  const fn = tf.customGrad(((z: tf.Tensor, save: tf.GradSaveFunc) => {
    const inputs = { logits: z, targets, mask };
    const [value, probs, nll] = runFused(SOFTMAX_XENT_KERNEL, inputs, () => softmaxCrossEntropyOps(inputs, attrs), {
      ...attrs,
    });
    // A sync read of a scalar: on the CPU-memory backends training runs on (wasm, cpu) it costs nothing.
    if (loss.onNll) loss.onNll(nll.dataSync()[0]);
    nll.dispose();
    // Saved, not closed over: the caller's tidy() disposes targets and mask before backprop runs.
    save([probs, targets, mask]);
    return {
      value,
      gradFunc: (dy: tf.Tensor, [p, ys, ms]: tf.Tensor[]) => {
        const gradInputs = { probs: p, targets: ys, mask: ms, dy };
        return runFused(SOFTMAX_XENT_GRAD_KERNEL, gradInputs, () => softmaxCrossEntropyGradOps(gradInputs, attrs), {
          ...attrs,
        })[0];
      },
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return fn(logits) as tf.Scalar;
}

/**
 * {@link maskedCrossEntropySum} of `head`'s scores for f [N, d] against targets [N]: the logits [N, |V|], or, for a
 * compact output layer, its own [N, K] logits and the targets as their columns (`OutputHead.trainingScores`), the
 * same loss without widening the logits to |V|. Every translation architecture's loss goes through here.
 */
export function headCrossEntropySum(
  head: OutputHead,
  f: tf.Tensor2D,
  targets: tf.Tensor1D,
  mask: tf.Tensor1D,
  training: boolean,
  loss?: TokenLossOptions,
): tf.Scalar {
  // One scope, whose scores nothing else reads: the loss writes its probabilities over them, and what the head made
  // on the way is freed here, not when the forward pass ends.
  return tf.tidy(() => {
    const scored = head.trainingScores?.(f, targets, training) ?? { logits: head.logits(f, training), targets };
    return maskedCrossEntropySum(scored.logits, scored.targets, mask, loss, true);
  });
}

function checkSmoothing(eps: number, V: number): number {
  if (!(eps >= 0 && eps < 1)) throw new RangeError(`label smoothing must be in [0, 1), got ${eps}`);
  if (eps > 0 && V < 2) throw new RangeError(`label smoothing needs a vocabulary of 2 or more words, got ${V}`);
  return eps;
}

/** The weights of the smoothed target distribution: `onTarget` at y_i, `offTarget` at each other word. */
export function smoothedTargetWeights(smoothing: number, V: number): { onTarget: number; offTarget: number } {
  const offTarget = smoothing > 0 ? smoothing / (V - 1) : 0;
  return { onTarget: 1 - smoothing, offTarget };
}

/**
 * The loss as a kernel contract (a backend may register either; frost registers both for wasm:
 * train/backend/kernels/softmax-xent.ts). ε = attr smoothing, ε' = ε / (|V| − 1):
 *
 *   FrostSoftmaxXent      inputs  logits [N, |V|], targets int32 [N], mask [N]; attrs smoothing
 *                         outputs value [] = Σ_i mask_i ((1 − ε − ε') nll_i + ε' (|V| lse_i − Σ_j z_ij)),
 *                                 probs [N, |V|], nll [] = Σ_i mask_i nll_i,
 *                                 where lse_i = logsumexp(z_i), nll_i = lse_i − z_i[y_i]
 *   FrostSoftmaxXentGrad  inputs  probs, targets, mask, dy []; attrs smoothing
 *                         outputs dlogits [N, |V|] = dy · mask_i (probs_i − ε' − (1 − ε − ε') onehot(y_i))
 *
 * With ε = 0 both are the plain cross-entropy and value = nll. With attr inPlace a kernel may write its [N, |V|]
 * output over its [N, |V|] input (probs over logits, dlogits over probs) when nothing else holds that input's data:
 * the caller promises not to read the input again (headCrossEntropySum's logits are its own; the saved probs are
 * read by this one gradient). A training step then keeps one matrix of the vocabulary's width, not three.
 */
export const SOFTMAX_XENT_KERNEL = 'FrostSoftmaxXent';
export const SOFTMAX_XENT_GRAD_KERNEL = 'FrostSoftmaxXentGrad';

/** FrostSoftmaxXent as tfjs ops. */
export function softmaxCrossEntropyOps(
  { logits: z, targets, mask }: tf.NamedTensorMap,
  { smoothing = 0 }: { smoothing?: number } = {},
): tf.Tensor[] {
  const [N, V] = z.shape as [number, number];
  // One softmax kernel (vectorised on wasm: XNNPACK) instead of exp, sum and div; logsumexp
  // follows from it exactly: the largest logit's probability is 1/Σexp(z − max), never below 1/|V|.
  const probs = tf.softmax(z);
  const lse = tf.sub(tf.max(z, 1), tf.log(tf.max(probs, 1)));
  const flatIndex = tf.add(tf.mul(tf.range(0, N, 1, 'int32'), tf.scalar(V, 'int32')), targets);
  const picked = tf.gather(tf.reshape(z, [-1]), flatIndex);
  const nll = tf.sum(tf.mul(tf.sub(lse, picked), mask));
  if (smoothing === 0) return [nll, probs, tf.clone(nll)];
  const { onTarget, offTarget } = smoothedTargetWeights(smoothing, V);
  const rowNll = tf.sub(lse, picked);
  const rowSmooth = tf.sub(tf.mul(lse, V), tf.sum(z, 1));
  const row = tf.add(tf.mul(rowNll, onTarget - offTarget), tf.mul(rowSmooth, offTarget));
  return [tf.sum(tf.mul(row, mask)), probs, nll];
}

/** FrostSoftmaxXentGrad as tfjs ops. */
export function softmaxCrossEntropyGradOps(
  { probs, targets, mask, dy }: tf.NamedTensorMap,
  { smoothing = 0 }: { smoothing?: number } = {},
): tf.Tensor[] {
  const [N, V] = probs.shape as [number, number];
  const { onTarget, offTarget } = smoothedTargetWeights(smoothing, V);
  const q =
    smoothing === 0
      ? tf.oneHot(targets as tf.Tensor1D, V, 1, 0, 'float32')
      : tf.oneHot(targets as tf.Tensor1D, V, onTarget, offTarget, 'float32');
  const diff = tf.sub(probs, q);
  return [tf.mul(diff, tf.reshape(tf.mul(mask, dy), [N, 1]))];
}
