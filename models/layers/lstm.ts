import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { transposed } from '../onnx-values.ts';
import type { ParamStore } from '../params.ts';
import type { StepMatMul } from './shared-matmul.ts';

/**
 * An LSTM with fused gates, in ONNX's formulation (no peepholes, σ / tanh / tanh):
 *   [i o f g] = x Wx + bx + h Wh + bh          (one [*, 4H] pre-activation for all four gates)
 *   i, o, f = σ(·)    g = tanh(·)
 *   c' = f ⊙ c + i ⊙ g        h' = o ⊙ tanh(c')
 * so export only transposes the weights into an ONNX LSTM node.
 *
 * Porting note: the gate blocks are ordered i, o, f, g (ONNX's iofc), not tfjs/Keras's i, f, g, o
 * (tf2onnx permutes them in `_convert_gates_ifco_to_iofc`); keeping ONNX's order in training means
 * export copies the blocks as they are. test/caption-model-layers.test.ts pins the order against
 * onnxruntime's LSTM.
 */
export interface LstmWeights {
  hidden: number;
  /** [in, 4H] */ Wx: tf.Variable;
  /** [4H] */ bx: tf.Variable;
  /** [H, 4H] */ Wh: tf.Variable;
  /** [4H] */ bh: tf.Variable;
}

export interface LstmState {
  h: tf.Tensor2D;
  c: tf.Tensor2D;
}

/** Gate block offsets in the fused [*, 4H] pre-activation, in units of H. */
export const LSTM_GATES = { input: 0, output: 1, forget: 2, cell: 3 } as const;

/** Forget-gate bias at initialisation: 1 keeps the cell's memory early in training (Jozefowicz et al., 2015). */
const FORGET_BIAS = 1;

export function createLstm(params: ParamStore, prefix: string, input: number, hidden: number): LstmWeights {
  const bx = params.variable(`${prefix}/bx`, [4 * hidden], { kind: 'zeros' });
  const forget = new Float32Array(4 * hidden);
  forget.fill(FORGET_BIAS, LSTM_GATES.forget * hidden, (LSTM_GATES.forget + 1) * hidden);
  bx.assign(tf.tensor1d(forget));
  return {
    hidden,
    Wx: params.variable(`${prefix}/Wx`, [input, 4 * hidden], { kind: 'glorot-uniform' }),
    bx,
    Wh: params.variable(`${prefix}/Wh`, [hidden, 4 * hidden], { kind: 'glorot-uniform' }),
    bh: params.variable(`${prefix}/bh`, [4 * hidden], { kind: 'zeros' }),
  };
}

/** The input-side gate pre-activations x Wx + bx, for many time steps in one MatMul (teacher forcing). */
export function lstmInputProjection(w: LstmWeights, x: tf.Tensor2D): tf.Tensor2D {
  return tf.add(tf.matMul(x, w.Wx), w.bx);
}

/** One step from precomputed input pre-activations gx [B, 4H] and the previous state. */
export function lstmStep(w: LstmWeights, gx: tf.Tensor2D, state: LstmState): LstmState {
  return lstmStepWith(w, gx, state, (x) => tf.matMul(x, w.Wh));
}

/**
 * lstmStep with h · Wh computed by `hWh`: a recurrence passes sharedWeightMatMul(w.Wh)
 * (shared-matmul.ts) so that Wh's gradient is one GEMM over all steps.
 */
export function lstmStepWith(w: LstmWeights, gx: tf.Tensor2D, state: LstmState, hWh: StepMatMul): LstmState {
  const H = w.hidden;
  const B = state.h.shape[0];
  const z = tf.add(gx, tf.add(hWh(state.h), w.bh));
  // i, o, f are contiguous: one sigmoid over [B, 3H].
  const iof = tf.sigmoid(tf.slice(z, [0, 0], [B, 3 * H]));
  const g = tf.tanh(tf.slice(z, [0, 3 * H], [B, H]));
  const i = tf.slice(iof, [0, LSTM_GATES.input * H], [B, H]);
  const o = tf.slice(iof, [0, LSTM_GATES.output * H], [B, H]);
  const f = tf.slice(iof, [0, LSTM_GATES.forget * H], [B, H]);
  const c = tf.add(tf.mul(f, state.c), tf.mul(i, g)) as tf.Tensor2D;
  return { h: tf.mul(o, tf.tanh(c)) as tf.Tensor2D, c };
}

/** ONNX LSTM initializers W [1, 4H, in], R [1, 4H, H], B [1, 8H] (Wb then Rb) for one direction. */
function lstmOnnxWeights(w: LstmWeights): { W: Float32Array; R: Float32Array; B: Float32Array; input: number } {
  const H = w.hidden;
  const input = w.Wx.shape[0];
  const B = new Float32Array(8 * H);
  B.set(w.bx.dataSync() as Float32Array, 0);
  B.set(w.bh.dataSync() as Float32Array, 4 * H);
  return {
    W: transposed(w.Wx.dataSync() as Float32Array, input, 4 * H),
    R: transposed(w.Wh.dataSync() as Float32Array, H, 4 * H),
    B,
    input,
  };
}

/**
 * One LSTM time step as an ONNX LSTM node: x [N, in], h and c [N, H] → h', c' [N, H]; without a
 * state the step starts from zeros (ONNX's default initial_h / initial_c). `name` prefixes the
 * W/R/B initializers (e.g. 'decoder/lstm').
 */
export function lstmOnnxStep(
  g: GraphBuilder,
  w: LstmWeights,
  name: string,
  x: string,
  state?: { h: string; c: string },
): { h: string; c: string } {
  const H = w.hidden;
  const ow = lstmOnnxWeights(w);
  // Y_h, Y_c [1, N, H] = LSTM(x [1, N, in], initial_h [1, N, H], initial_c [1, N, H])
  const [, hNext, cNext] = g.node(
    'LSTM',
    [
      g.unsqueeze(x, [0]),
      g.initializer(`${name}/W`, { dtype: 'float32', dims: [1, 4 * H, ow.input], data: ow.W }),
      g.initializer(`${name}/R`, { dtype: 'float32', dims: [1, 4 * H, H], data: ow.R }),
      g.initializer(`${name}/B`, { dtype: 'float32', dims: [1, 8 * H], data: ow.B }),
      ...(state ? ['', g.unsqueeze(state.h, [0]), g.unsqueeze(state.c, [0])] : []),
    ],
    { hidden_size: H },
    { outputs: 3 },
  );
  return { h: g.squeeze(hNext, [0]), c: g.squeeze(cNext, [0]) };
}
