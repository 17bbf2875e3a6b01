import * as tf from '@tensorflow/tfjs-core';
import { holdForBackprop } from './backprop-hold.ts';
import type { ParamStore } from '../params.ts';
import { fusedMode, runFused } from './fused.ts';
import type { StepMatMul } from './shared-matmul.ts';

/**
 * Bahdanau's additive attention: score_j = v · tanh(keys_j + s Wa + ba), keys = annotations Ua
 * computed once per source. Padded positions get -1e9 before the softmax.
 */
export interface AttentionWeights {
  /** [A, att] */ Ua: tf.Variable;
  /** [H, att] */ Wa: tf.Variable;
  /** [att] */ ba: tf.Variable;
  /** [att, 1] */ v: tf.Variable;
}

export const MASKED_SCORE = 1e9;

export function createAttention(
  params: ParamStore,
  prefix: string,
  annotation: number,
  query: number,
  size: number,
): AttentionWeights {
  return {
    Ua: params.variable(`${prefix}/Ua`, [annotation, size], { kind: 'glorot-uniform' }),
    Wa: params.variable(`${prefix}/Wa`, [query, size], { kind: 'glorot-uniform' }),
    ba: params.variable(`${prefix}/ba`, [size], { kind: 'zeros' }),
    v: params.variable(`${prefix}/v`, [size, 1], { kind: 'glorot-uniform' }),
  };
}

/** keys [B, S, att] from annotations [B, S, A]. */
export function attentionKeys(w: AttentionWeights, annotations: tf.Tensor3D): tf.Tensor3D {
  const [B, S, A] = annotations.shape;
  return tf.reshape(tf.matMul(tf.reshape(annotations, [B * S, A]), w.Ua), [B, S, -1]);
}

/** The context vector c [B, A] for queries s [B, H]. */
export function attend(
  w: AttentionWeights,
  s: tf.Tensor2D,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  srcMask: tf.Tensor2D,
): tf.Tensor2D {
  return attendWith(w, s, annotations, keys, srcMask, (x) => tf.matMul(x, w.Wa));
}

/** attend with s · Wa computed by `sWa` (a decoder loop passes sharedWeightMatMul(w.Wa)). */
function attendWith(
  w: AttentionWeights,
  s: tf.Tensor2D,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  srcMask: tf.Tensor2D,
  sWa: StepMatMul,
): tf.Tensor2D {
  [annotations, keys, srcMask] = firstRows(s.shape[0], annotations, keys, srcMask);
  const [B, S, att] = keys.shape;
  const q = tf.add(sWa(s), w.ba);
  const energy = tf.tanh(tf.add(keys, tf.reshape(q, [B, 1, att])));
  const scores = tf.reshape(tf.matMul(tf.reshape(energy, [B * S, att]), w.v), [B, S]);
  const masked = tf.add(scores, tf.mul(tf.sub(srcMask, 1), MASKED_SCORE));
  const alpha = tf.softmax(masked, 1);
  return tf.reshape(tf.matMul(tf.reshape(alpha, [B, 1, S]), annotations), [B, -1]);
}

/**
 * The first `rows` rows of per-source tensors: a decoder that drops finished sentences (rows sorted
 * longest first, models/packed-steps.ts) queries a prefix of the batch.
 */
function firstRows<T extends tf.Tensor[]>(rows: number, ...xs: T): T {
  const B = xs[0].shape[0];
  if (rows > B) throw new RangeError(`attention query has ${rows} rows, annotations ${B}`);
  if (rows === B) return xs;
  return xs.map((x) => tf.slice(x, 0, rows)) as T;
}

/**
 * The fused attention's kernel contract (B rows of annotations, n ≤ B query rows: the queries
 * attend over the first n rows; S positions, att the attention size, A the annotation size; all
 * float32):
 *
 *   FrostAdditiveAttention      inputs  q [n, att], keys [B, S, att] (ba included), v [att],
 *                                       scoreBias? [B, S], annotations [B, S, A]
 *                               outputs context [n, A], energy [n, S, att], alpha [n, S]
 *   FrostAdditiveAttentionGrad  inputs  dContext [n, A], annotations, alpha, energy, v, and the running
 *                                       sums dKeys [B, S, att], dV [att] (both or neither)
 *                               outputs dq [n, att], then dKeys [B, S, att], dV: this step's
 *                                       gradients added to the running sums
 *
 * with energy = tanh(keys + q), scores = energy · v + scoreBias, α = softmax_S(scores),
 * context = Σ_s α_s annotations_s; backward dα_s = dContext · annotations_s,
 * dscores = α ⊙ (dα − Σ_s α_s dα_s), g = (1 − energy²) ⊙ v ⊙ dscores, dq = Σ_s g, dKeys += g,
 * dV += Σ_{b,s} energy dscores. The annotations' own gradient, Σ_t α_tᵀ dContext_t, is not part of
 * it: attentionSteps makes it once, for all steps, as one batched product.
 */
export const ATTENTION_KERNEL = 'FrostAdditiveAttention';
export const ATTENTION_GRAD_KERNEL = 'FrostAdditiveAttentionGrad';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * The gradients wrt keys, annotations and v over a decoder's steps: running sums of dkeys and dv,
 * and each step's α and dContext for the annotations' gradient Σ_t α_tᵀ dContext_t, made at the
 * end as one [B, S, T] × [B, T, A] product (a [B, S, A] pass per step less than a running sum).
 * α and dContext are the tape's tensors (saved, and the upstream gradient), held until backprop ends
 * (backprop-hold.ts).
 */
class RunningGradients {
  private sums: tf.Tensor[] | null = null;
  private readonly alphas: tf.Tensor[] = [];
  private readonly dContexts: tf.Tensor[] = [];

  /** `rows`: the annotations' batch rows (a step's queries may cover only the first of them). */
  constructor(private readonly rows: number) {}

  /** The running sums as kernel inputs (none before the first step's gradient). */
  inputs(): tf.NamedTensorMap {
    if (this.sums == null) return {};
    const [dKeys, dV] = this.sums;
    return { dKeys, dV };
  }

  addStep(alpha: tf.Tensor, dContext: tf.Tensor): void {
    holdForBackprop(alpha, dContext);
    // A step over fewer rows (finished sentences dropped) adds nothing to the others' gradients.
    const missing = this.rows - alpha.shape[0];
    this.alphas.push(
      missing === 0
        ? alpha
        : tf.pad(alpha, [
            [0, missing],
            [0, 0],
          ]),
    );
    this.dContexts.push(
      missing === 0
        ? dContext
        : tf.pad(dContext, [
            [0, missing],
            [0, 0],
          ]),
    );
  }

  replace(next: tf.Tensor[]): void {
    if (this.sums != null) tf.dispose(this.sums);
    this.sums = next;
  }

  /** [dKeys, dAnnotations, dV], handed over to the caller. */
  take(): tf.Tensor[] {
    const [dKeys, dV] = this.sums!;
    const dAnnotations = tf.matMul(tf.stack(this.alphas, 2) as tf.Tensor3D, tf.stack(this.dContexts, 1) as tf.Tensor3D);
    this.sums = null;
    this.alphas.length = 0;
    this.dContexts.length = 0;
    return [dKeys, dAnnotations, dV];
  }
}

/**
 * Attention for every step of a decoder over the same annotations: returns s ↦ c. The per-source
 * work is done once (keys + ba, the mask's score bias), and each step is one fused op.
 *
 * The gradients wrt keys, annotations and v are summed over the steps inside the ops
 * (RunningGradients) and handed to the tape once, by the first step's op, whose gradient backprop
 * takes last (the device shared-matmul.ts uses for W): only that op has keys, annotations and v
 * among its inputs. Per step that saves the [B, S, att] and [B, S, A] Adds autodiff makes to
 * accumulate them.
 */
export function attentionSteps(
  w: AttentionWeights,
  annotations: tf.Tensor3D,
  keys: tf.Tensor3D,
  srcMask: tf.Tensor2D,
  sWa: StepMatMul,
): (s: tf.Tensor2D) => tf.Tensor2D {
  if (fusedMode() === 'unfused') return (s) => attendWith(w, s, annotations, keys, srcMask, sWa);
  const [B, , att] = keys.shape;
  const keysB = tf.add(keys, w.ba) as tf.Tensor3D;
  const v = tf.reshape(w.v, [att]);
  const scoreBias = tf.mul(tf.sub(srcMask, 1), MASKED_SCORE);
  const sums = new RunningGradients(B);
  // One step: the context for query q, and a gradient function that returns dq and adds the
  // step's shares of dkeys and dv to the running sums.
  const forward = (q: tf.Tensor, save: tf.GradSaveFunc) => {
    const inputs: tf.NamedTensorMap = { q, keys: keysB, v, scoreBias, annotations };
    const [context, energy, alpha] = runFused(ATTENTION_KERNEL, inputs, () => attentionOps(inputs));
    // annotations and v saved too: the caller's tidy() may dispose them before backprop runs.
    save([energy, alpha, annotations, v]);
    const backward = (dContext: tf.Tensor, [e, al, ann, vv]: tf.Tensor[]): tf.Tensor => {
      const gradInputs: tf.NamedTensorMap = {
        dContext,
        annotations: ann,
        alpha: al,
        energy: e,
        v: vv,
        ...sums.inputs(),
      };
      const [dq, ...running] = runFused(ATTENTION_GRAD_KERNEL, gradInputs, () => attentionGradOps(gradInputs));
      sums.replace(running);
      sums.addStep(al, dContext);
      return dq;
    };
    return { context, backward };
  };
  const stepOp = tf.customGrad(((q: tf.Tensor, save: tf.GradSaveFunc) => {
    const { context, backward } = forward(q, save);
    return { value: context, gradFunc: backward };
  }) as unknown as CustomGradFn);
  const firstOp = tf.customGrad(((q: tf.Tensor, _k: tf.Tensor, _a: tf.Tensor, _v: tf.Tensor, save: tf.GradSaveFunc) => {
    const { context, backward } = forward(q, save);
    return {
      value: context,
      gradFunc: (dContext: tf.Tensor, saved: tf.Tensor[]) => [backward(dContext, saved), ...sums.take()],
    };
  }) as unknown as CustomGradFn);
  let first = true;
  return (s) => {
    const q = sWa(s);
    if (q.shape[0] > B) throw new RangeError(`attention query has ${q.shape[0]} rows, annotations ${B}`);
    if (!first) return stepOp(q) as tf.Tensor2D;
    first = false;
    return firstOp(q, keysB, annotations, v) as tf.Tensor2D;
  };
}

/** FrostAdditiveAttention as tfjs ops. */
export function attentionOps(inputs: tf.NamedTensorMap): tf.Tensor[] {
  const { q, v } = inputs;
  let { keys, scoreBias, annotations } = inputs;
  [keys, annotations] = firstRows(q.shape[0], keys, annotations);
  if (scoreBias != null) [scoreBias] = firstRows(q.shape[0], scoreBias);
  const [B, S, att] = keys.shape as [number, number, number];
  const energy = tf.tanh(tf.add(keys, tf.reshape(q, [B, 1, att])));
  const scores = tf.reshape(tf.matMul(tf.reshape(energy, [B * S, att]), tf.reshape(v, [att, 1])), [B, S]);
  const alpha = tf.softmax(scoreBias == null ? scores : tf.add(scores, scoreBias), 1);
  const context = tf.reshape(tf.matMul(tf.reshape(alpha, [B, 1, S]), annotations), [B, -1]);
  return [context, energy, alpha];
}

/** FrostAdditiveAttentionGrad as tfjs ops. */
export function attentionGradOps({
  dContext,
  annotations: allAnnotations,
  alpha,
  energy,
  v,
  dKeys,
  dV,
}: tf.NamedTensorMap): tf.Tensor[] {
  const [B, S, att] = energy.shape as [number, number, number];
  const [annotations] = firstRows(B, allAnnotations);
  const A = annotations.shape[2] as number;
  const dAlpha = tf.reshape(tf.matMul(tf.reshape(dContext, [B, 1, A]), annotations, false, true), [B, S]);
  const dScores = tf.mul(alpha, tf.sub(dAlpha, tf.sum(tf.mul(alpha, dAlpha), 1, true)));
  const g = tf.mul(tf.mul(tf.sub(1, tf.square(energy)), v), tf.reshape(dScores, [B, S, 1]));
  const dvStep = tf.reshape(tf.matMul(tf.reshape(energy, [B * S, att]), tf.reshape(dScores, [B * S, 1]), true, false), [
    att,
  ]);
  const plus = (step: tf.Tensor, sum: tf.Tensor | undefined) => (sum == null ? step : tf.add(sum, step));
  const missing = allAnnotations.shape[0] - B;
  const gAll =
    missing === 0
      ? g
      : tf.pad(g, [
          [0, missing],
          [0, 0],
          [0, 0],
        ]);
  return [tf.sum(g, 1), plus(gAll, dKeys), plus(dvStep, dV)];
}
