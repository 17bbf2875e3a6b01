import * as tf from '@tensorflow/tfjs-core';
import type { ParamStore } from '../params.ts';
import { transposed } from '../onnx-values.ts';
import type { StepMatMul } from './shared-matmul.ts';

/**
 * A GRU in ONNX's formulation with linear_before_reset = 1, gates ordered z, r, h:
 *   z = σ(x Wz + bxz + h Rz + bhz)        r = σ(x Wr + bxr + h Rr + bhr)
 *   n = tanh(x Wn + bxn + r ⊙ (h Rn + bhn))  h' = (1 - z) ⊙ n + z ⊙ h
 * so export only transposes the weights into an ONNX GRU node.
 * Porting note: this is also tfjs/Keras's GRU with resetAfter = true (its gate order is z, r, h too).
 */
export interface GruWeights {
  hidden: number;
  /** [in, 3H] */ Wx: tf.Variable;
  /** [3H] */ bx: tf.Variable;
  /** [H, 3H] */ Wh: tf.Variable;
  /** [3H] */ bh: tf.Variable;
}

export function createGru(params: ParamStore, prefix: string, input: number, hidden: number): GruWeights {
  return {
    hidden,
    Wx: params.variable(`${prefix}/Wx`, [input, 3 * hidden], { kind: 'glorot-uniform' }),
    bx: params.variable(`${prefix}/bx`, [3 * hidden], { kind: 'zeros' }),
    Wh: params.variable(`${prefix}/Wh`, [hidden, 3 * hidden], { kind: 'glorot-uniform' }),
    bh: params.variable(`${prefix}/bh`, [3 * hidden], { kind: 'zeros' }),
  };
}

/** The input-side gate pre-activations x Wx + bx, for many time steps in one MatMul. */
export function gruInputProjection(w: GruWeights, x: tf.Tensor2D): tf.Tensor2D {
  return tf.add(tf.matMul(x, w.Wx), w.bx);
}

/** One step from precomputed input pre-activations gx [B, 3H] and the previous state h [B, H]. */
export function gruStep(w: GruWeights, gx: tf.Tensor2D, h: tf.Tensor2D): tf.Tensor2D {
  return gruStepWith(w, gx, h, (x) => tf.matMul(x, w.Wh));
}

/**
 * gruStep with h · Wh computed by `hWh`: a recurrence passes sharedWeightMatMul(w.Wh) (shared-matmul.ts)
 * so that Wh's gradient is one GEMM over all steps.
 */
export function gruStepWith(w: GruWeights, gx: tf.Tensor2D, h: tf.Tensor2D, hWh: StepMatMul): tf.Tensor2D {
  const H = w.hidden;
  const B = h.shape[0];
  const gh = tf.add(hWh(h), w.bh);
  const zr = tf.sigmoid(tf.add(tf.slice(gx, [0, 0], [B, 2 * H]), tf.slice(gh, [0, 0], [B, 2 * H])));
  const z = tf.slice(zr, [0, 0], [B, H]);
  const r = tf.slice(zr, [0, H], [B, H]);
  const n = tf.tanh(tf.add(tf.slice(gx, [0, 2 * H], [B, H]), tf.mul(r, tf.slice(gh, [0, 2 * H], [B, H]))));
  // (1 - z) n + z h, written with one fewer op.
  return tf.add(n, tf.mul(z, tf.sub(h, n)));
}

/** ONNX GRU initializers W [dirs, 3H, in], R [dirs, 3H, H], B [dirs, 6H] for one or two directions. */
export function gruOnnxWeights(directions: GruWeights[]): { W: Float32Array; R: Float32Array; B: Float32Array; input: number } {
  const H = directions[0].hidden;
  const input = directions[0].Wx.shape[0];
  const W = new Float32Array(directions.length * 3 * H * input);
  const R = new Float32Array(directions.length * 3 * H * H);
  const B = new Float32Array(directions.length * 6 * H);
  directions.forEach((d, i) => {
    W.set(transposed(d.Wx.dataSync() as Float32Array, input, 3 * H), i * 3 * H * input);
    R.set(transposed(d.Wh.dataSync() as Float32Array, H, 3 * H), i * 3 * H * H);
    B.set(d.bx.dataSync() as Float32Array, i * 6 * H);
    B.set(d.bh.dataSync() as Float32Array, i * 6 * H + 3 * H);
  });
  return { W, R, B, input };
}
