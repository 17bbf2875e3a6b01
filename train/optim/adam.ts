import * as tf from '@tensorflow/tfjs-core';
import { leanVariableGrads } from './lean-backprop.ts';
import { runFused } from '../../models/layers/fused.ts';

export interface AdamOptions {
  /** @default 1e-3 */
  learningRate?: number;
  /** @default 0.9 */
  beta1?: number;
  /** @default 0.999 */
  beta2?: number;
  /** @default 1e-8 */
  epsilon?: number;
  /** Gradients are rescaled when their global L2 norm exceeds this; 0 turns clipping off. @default 5 */
  clipNorm?: number;
}

/**
 * One Adam update of a parameter, as a kernel contract (frost registers it for wasm:
 * train/backend/kernels/adam.ts, one pass over p, m, v and g instead of 13 kernels of a pass each):
 *
 *   FrostAdam  inputs p, m, v, g (same shape); attrs lr, beta1, beta2, epsilon, scale
 *              outputs p', m', v' with ĝ = scale · g, m' = β₁m + (1 − β₁)ĝ, v' = β₂v + (1 − β₂)ĝ²,
 *              p' = p − lr · m' / (√v' + ε)   (lr already bias-corrected)
 */
export const ADAM_KERNEL = 'FrostAdam';

/**
 * Σ x² of a gradient, for the global norm, as a kernel contract (wasm: train/backend/kernels/
 * sum-squares.ts, one pass instead of Square and Sum):
 *
 *   FrostSumSquares  inputs x; outputs [] = Σ x²
 */
export const SUM_SQUARES_KERNEL = 'FrostSumSquares';

/** Σ x² through FrostSumSquares, or Square and Sum where the backend does not register it. */
function sumOfSquares(x: tf.Tensor): tf.Scalar {
  return runFused(SUM_SQUARES_KERNEL, { x }, () => [tf.sum(tf.square(x))])[0] as tf.Scalar;
}

export interface AdamUpdateAttrs {
  lr: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  /** The gradient's scale from norm clipping (1: none). */
  scale: number;
}

/** FrostAdam as tfjs ops. */
export function adamUpdateOps(
  p: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  g0: tf.Tensor,
  a: AdamUpdateAttrs,
): tf.Tensor[] {
  const g = a.scale === 1 ? g0 : tf.mul(g0, a.scale);
  const m2 = tf.add(tf.mul(m, a.beta1), tf.mul(g, 1 - a.beta1));
  const v2 = tf.add(tf.mul(v, a.beta2), tf.mul(tf.square(g), 1 - a.beta2));
  return [tf.sub(p, tf.mul(tf.div(m2, tf.add(tf.sqrt(v2), a.epsilon)), a.lr)), m2, v2];
}

/**
 * Adam over an explicit list of variables. Written out rather than tf.train.adam so that the
 * learning rate can change between steps, the moments can be checkpointed by parameter name, and
 * frozen tensors (which are not in the list) never get moments or gradients.
 */
export class Adam {
  learningRate: number;
  step = 0;
  private readonly beta1: number;
  private readonly beta2: number;
  private readonly epsilon: number;
  private readonly clipNorm: number;
  readonly m = new Map<string, tf.Variable>();
  readonly v = new Map<string, tf.Variable>();

  constructor(
    private readonly vars: Map<string, tf.Variable>,
    opts: AdamOptions = {},
  ) {
    this.learningRate = opts.learningRate ?? 1e-3;
    this.beta1 = opts.beta1 ?? 0.9;
    this.beta2 = opts.beta2 ?? 0.999;
    this.epsilon = opts.epsilon ?? 1e-8;
    this.clipNorm = opts.clipNorm ?? 5;
    for (const [name, x] of vars) {
      this.m.set(name, tf.variable(tf.zerosLike(x), false));
      this.v.set(name, tf.variable(tf.zerosLike(x), false));
    }
  }

  /**
   * Computes gradients of `loss` (a scalar built from the variables) and applies one update.
   * Returns the loss value and the gradient norm before clipping.
   */
  minimize(loss: () => tf.Scalar): { loss: number; gradNorm: number } {
    const names = [...this.vars.keys()];
    const varList = names.map((n) => this.vars.get(n)!);
    const { value, grads } = leanVariableGrads(loss, varList);
    const lossValue = value.dataSync()[0];
    this.step += 1;
    const gradNorm = tf.tidy(() => {
      // A variable the loss does not reach gets no gradient: treat it as zero rather than fail.
      const gs = varList.map((x) => grads[x.name] ?? tf.zerosLike(x));
      const norm = tf.sqrt(tf.addN(gs.map(sumOfSquares)));
      const normValue = norm.dataSync()[0];
      const scale = this.clipNorm > 0 && normValue > this.clipNorm ? this.clipNorm / normValue : 1;
      const lr = (this.learningRate * Math.sqrt(1 - this.beta2 ** this.step)) / (1 - this.beta1 ** this.step);
      const attrs: AdamUpdateAttrs = { lr, beta1: this.beta1, beta2: this.beta2, epsilon: this.epsilon, scale };
      names.forEach((name, i) => {
        const m = this.m.get(name)!;
        const v = this.v.get(name)!;
        const [p2, m2, v2] = runFused(
          ADAM_KERNEL,
          { p: varList[i], m, v, g: gs[i] },
          () => adamUpdateOps(varList[i], m, v, gs[i], attrs),
          { ...attrs },
        );
        m.assign(m2);
        v.assign(v2);
        varList[i].assign(p2);
      });
      return normValue;
    });
    value.dispose();
    for (const g of Object.values(grads)) g.dispose();
    return { loss: lossValue, gradNorm };
  }

  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
  }
}
