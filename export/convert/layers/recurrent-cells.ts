/**
 * tfjs recurrent cells (SimpleRNN, GRU, LSTM) as ONNX RNN/GRU/LSTM
 * parameters: the W, R, B inputs for one direction and the cell's
 * activations. The per-cell formulas are in the doc comments of
 * {@link lstmCell}, {@link gruCell} and {@link simpleRnnCell}.
 */
import { rnnActivation, type RnnActivation } from '../activations.ts';
import { unsupported } from '../errors.ts';
import type { LayerConfig } from '../layer-config.ts';
import { concat1d, reorderBlocks, transpose, type Array32 } from '../weight-layout.ts';
import type { LayerWeights } from '../weights.ts';

/** The recurrent layer classes and the ONNX op that runs each. */
export const RECURRENT_OPS = { SimpleRNN: 'RNN', GRU: 'GRU', LSTM: 'LSTM' } as const;
export type RecurrentClass = keyof typeof RECURRENT_OPS;

/** ONNX parameters of one direction of a recurrent layer. */
export interface CellParams {
  /** Input weights [gates·H, in]. */
  W: Array32;
  /** Recurrent weights [gates·H, H]. */
  R: Array32;
  /** Biases [Wb, Rb] concatenated, [2·gates·H], or undefined without bias. */
  B?: Float32Array;
  /** The ONNX `activations` of this direction, in the op's order (f, g, h). */
  activations: RnnActivation[];
  /** GRU only: ONNX `linear_before_reset`. */
  linearBeforeReset?: 0 | 1;
}

/** Keras kernels are [in, gates·H] (x · kernel); ONNX wants W as [gates·H, in] (X · Wᵀ). */
const toOnnx = (kernel: Array32): Array32 => transpose(kernel, [1, 0]);

/**
 * Porting note: tfjs (and Keras) LSTM gate blocks are ordered i, f, c, o
 * along the kernel's last axis; ONNX LSTM wants i, o, f, c
 * (tf2onnx `_convert_gates_ifco_to_iofc`). Output block k takes input block
 * IFCO_TO_IOFC[k].
 */
export const IFCO_TO_IOFC = [0, 3, 1, 2];

/**
 * LSTM (tfjs-layers recurrent.ts LSTMCell), per step:
 *   z = x_t·kernel + h_{t-1}·recurrent_kernel + bias   (blocks i, f, c, o)
 *   i = σ(z_i), f = σ(z_f), o = σ(z_o)                σ = recurrent_activation
 *   c_t = f ⊙ c_{t-1} + i ⊙ act(z_c),  h_t = o ⊙ act(c_t)
 * which is ONNX LSTM with activations (f, g, h) = (σ, act, act), W, R, Wb in
 * i, o, f, c order and Rb = 0.
 */
function lstmCell(config: LayerConfig, weights: LayerWeights, units: number): CellParams {
  const kernel = weights.get('kernel');
  const recurrent = weights.get('recurrent_kernel', [units, 4 * units]);
  const W = toOnnx(reorderBlocks(kernel, IFCO_TO_IOFC));
  const R = toOnnx(reorderBlocks(recurrent, IFCO_TO_IOFC));
  let B: Float32Array | undefined;
  if (config.bool('use_bias', true)) {
    const bias = reorderBlocks(weights.get('bias', [4 * units]), IFCO_TO_IOFC);
    B = concat1d([bias.data, new Float32Array(4 * units)]);
  }
  const sigma = rnnActivation(config.get('recurrent_activation') ?? 'hard_sigmoid');
  const act = rnnActivation(config.get('activation') ?? 'tanh');
  return { W, R, B, activations: [sigma, act, act] };
}

/**
 * GRU (tfjs-layers recurrent.ts GRUCell; Keras GRU), per step, blocks z, r, h
 * (the same order as ONNX GRU):
 *   z = σ(x·K_z + b_z + h·U_z + rb_z),  r = σ(x·K_r + b_r + h·U_r + rb_r)
 *   reset_after = false:  ĥ = act(x·K_h + b_h + (r ⊙ h)·U_h)
 *   reset_after = true:   ĥ = act(x·K_h + b_h + r ⊙ (h·U_h + rb_h))
 *   h_t = z ⊙ h_{t-1} + (1 - z) ⊙ ĥ
 * which is ONNX GRU with activations (f, g) = (σ, act).
 *
 * Porting note: reset_after maps to ONNX `linear_before_reset` (true → 1,
 * false → 0), and it changes the bias layout: without it tfjs/Keras keep one
 * input bias [3H] (ONNX Rb = 0); with it Keras keeps [2, 3H] = [input bias;
 * recurrent bias], which are ONNX's Wb and Rb. tfjs itself cannot build a
 * reset_after GRU (it throws), but Keras GRUs converted to tfjs have one.
 */
function gruCell(config: LayerConfig, weights: LayerWeights, units: number): CellParams {
  const resetAfter = config.bool('reset_after', false);
  const W = toOnnx(weights.get('kernel'));
  const R = toOnnx(weights.get('recurrent_kernel', [units, 3 * units]));
  let B: Float32Array | undefined;
  if (config.bool('use_bias', true)) {
    if (resetAfter) {
      B = weights.get('bias', [2, 3 * units]).data.slice(); // row 0 = Wb, row 1 = Rb: already ONNX's [Wb, Rb]
    } else {
      B = concat1d([weights.get('bias', [3 * units]).data, new Float32Array(3 * units)]);
    }
  }
  const sigma = rnnActivation(config.get('recurrent_activation') ?? 'hard_sigmoid');
  const act = rnnActivation(config.get('activation') ?? 'tanh');
  return { W, R, B, activations: [sigma, act], linearBeforeReset: resetAfter ? 1 : 0 };
}

/**
 * SimpleRNN: h_t = act(x_t·kernel + h_{t-1}·recurrent_kernel + bias), which
 * is ONNX RNN with activation act and Rb = 0.
 */
function simpleRnnCell(config: LayerConfig, weights: LayerWeights, units: number): CellParams {
  const W = toOnnx(weights.get('kernel'));
  const R = toOnnx(weights.get('recurrent_kernel', [units, units]));
  const B = config.bool('use_bias', true)
    ? concat1d([weights.get('bias', [units]).data, new Float32Array(units)])
    : undefined;
  return { W, R, B, activations: [rnnActivation(config.get('activation') ?? 'tanh')] };
}

/** The cell parameters of a recurrent layer class; refuses configs ONNX cannot run. */
export function cellParams(className: RecurrentClass, config: LayerConfig, weights: LayerWeights): CellParams {
  // A stateful RNN carries state across predict() calls; an ONNX graph has no such state.
  if (config.bool('stateful', false)) throw unsupported('stateful=true (state carried across calls) is not supported');
  const units = config.number('units');
  if (className === 'LSTM') return lstmCell(config, weights, units);
  if (className === 'GRU') return gruCell(config, weights, units);
  return simpleRnnCell(config, weights, units);
}

export function isRecurrentClass(className: string): className is RecurrentClass {
  return className in RECURRENT_OPS;
}
