import * as tf from '@tensorflow/tfjs-core';

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

  constructor(private readonly vars: Map<string, tf.Variable>, opts: AdamOptions = {}) {
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
    const { value, grads } = tf.variableGrads(loss, varList);
    const lossValue = value.dataSync()[0];
    this.step += 1;
    const gradNorm = tf.tidy(() => {
      // A variable the loss does not reach gets no gradient: treat it as zero rather than fail.
      const gs = varList.map((x) => grads[x.name] ?? tf.zerosLike(x));
      const norm = tf.sqrt(tf.addN(gs.map((g) => tf.sum(tf.square(g)))));
      const normValue = norm.dataSync()[0];
      const scale = this.clipNorm > 0 && normValue > this.clipNorm ? this.clipNorm / normValue : 1;
      const lr = this.learningRate * Math.sqrt(1 - this.beta2 ** this.step) / (1 - this.beta1 ** this.step);
      names.forEach((name, i) => {
        const g = scale === 1 ? gs[i] : tf.mul(gs[i], scale);
        const m = this.m.get(name)!;
        const v = this.v.get(name)!;
        m.assign(tf.add(tf.mul(m, this.beta1), tf.mul(g, 1 - this.beta1)));
        v.assign(tf.add(tf.mul(v, this.beta2), tf.mul(tf.square(g), 1 - this.beta2)));
        varList[i].assign(tf.sub(varList[i], tf.mul(tf.div(m, tf.add(tf.sqrt(v), this.epsilon)), lr)));
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
