/**
 * tfjs activations (the `activation` field of Dense, Conv*, RNNs, ... and the
 * Activation layer) as ONNX nodes, each under its tfjs formula
 * (tfjs-layers/src/activations.ts). Ops newer than the opsets frost targets
 * (Gelu: 20) or missing from older checkers (Mish: 18) are written as their
 * formula, which every runtime has.
 */
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { unsupported } from './errors.ts';
import type { Value } from './registry.ts';

type Emit = (g: GraphBuilder, x: string) => string;

/** Keyed by the normalised name (lower case, no underscores): 'hard_sigmoid' and 'hardSigmoid' are one. */
const ACTIVATIONS: Record<string, Emit> = {
  /** linear(x) = x */
  linear: (_g, x) => x,
  /** relu(x) = max(x, 0) */
  relu: (g, x) => g.op('Relu', [x]),
  /** relu6(x) = min(max(x, 0), 6) */
  relu6: (g, x) => g.op('Clip', [x, g.constFloat(0), g.constFloat(6)]),
  /** elu(x) = x > 0 ? x : exp(x) - 1 (alpha 1) */
  elu: (g, x) => g.op('Elu', [x], { alpha: 1 }),
  /** selu(x) = γ·(x > 0 ? x : α·(exp(x) - 1)), α ≈ 1.6733, γ ≈ 1.0507 (ONNX's defaults are tfjs' constants) */
  selu: (g, x) => g.op('Selu', [x]),
  /** sigmoid(x) = 1 / (1 + exp(-x)) */
  sigmoid: (g, x) => g.op('Sigmoid', [x]),
  /** hardSigmoid(x) = clip(0.2·x + 0.5, 0, 1) */
  hardsigmoid: (g, x) => g.op('HardSigmoid', [x], { alpha: 0.2, beta: 0.5 }),
  /** tanh(x) */
  tanh: (g, x) => g.op('Tanh', [x]),
  /** softmax(x) = exp(x) / Σ exp(x), over the last axis */
  softmax: (g, x) => g.op('Softmax', [x], { axis: -1 }),
  /** logSoftmax(x) = x - log Σ exp(x), over the last axis */
  logsoftmax: (g, x) => g.op('LogSoftmax', [x], { axis: -1 }),
  /** softplus(x) = log(1 + exp(x)) */
  softplus: (g, x) => g.op('Softplus', [x]),
  /** softsign(x) = x / (1 + |x|) */
  softsign: (g, x) => g.op('Softsign', [x]),
  /** exponential(x) = exp(x) (Keras) */
  exponential: (g, x) => g.op('Exp', [x]),
  /** swish(x) = x · sigmoid(x) */
  swish: (g, x) => g.op('Mul', [x, g.op('Sigmoid', [x])]),
  /** mish(x) = x · tanh(softplus(x)) */
  mish: (g, x) => g.op('Mul', [x, g.op('Tanh', [g.op('Softplus', [x])])]),
  /** gelu(x) = x · ½(1 + erf(x / √2)) (exact form) */
  gelu: (g, x) => {
    const erf = g.op('Erf', [g.op('Mul', [x, g.constFloat(Math.SQRT1_2)])]);
    const half = g.op('Mul', [g.op('Add', [erf, g.constFloat(1)]), g.constFloat(0.5)]);
    return g.op('Mul', [x, half]);
  },
  /** gelu_new(x) = ½x(1 + tanh(√(2/π)·(x + 0.044715·x³))) (tanh approximation) */
  gelunew: (g, x) => {
    const cube = g.op('Mul', [g.op('Mul', [x, x]), x]);
    const inner = g.op('Add', [x, g.op('Mul', [cube, g.constFloat(0.044715)])]);
    const t = g.op('Tanh', [g.op('Mul', [inner, g.constFloat(Math.sqrt(2 / Math.PI))])]);
    return g.op('Mul', [g.op('Mul', [x, g.constFloat(0.5)]), g.op('Add', [t, g.constFloat(1)])]);
  },
};

/**
 * The normalised name of an activation config value: a string, or `{ class_name }` (Keras 3); null/undefined is linear.
 */
function activationKey(raw: unknown): string {
  if (raw == null) return 'linear';
  const name = typeof raw === 'string' ? raw : (raw as { class_name?: unknown }).class_name;
  if (typeof name !== 'string') throw unsupported(`activation ${JSON.stringify(raw)} is not a name`);
  return name.toLowerCase().replace(/_/g, '');
}
/** Applies the activation `raw` (a config value) to `x`; its shape is unchanged. Refuses unknown ones. */
export function applyActivation(g: GraphBuilder, raw: unknown, x: Value): Value {
  const emit = ACTIVATIONS[activationKey(raw)];
  if (emit === undefined) throw unsupported(`activation '${String(raw)}' is not supported`);
  return { ...x, name: emit(g, x.name) };
}

/** An activation of the ONNX RNN/GRU/LSTM `activations` attribute, with its alpha/beta if it takes them. */
export interface RnnActivation {
  name: string;
  alpha?: number;
  beta?: number;
}

/** tfjs activations that ONNX recurrent ops can apply inside the cell. */
const RNN_ACTIVATIONS: Record<string, RnnActivation> = {
  tanh: { name: 'Tanh' },
  sigmoid: { name: 'Sigmoid' },
  hardsigmoid: { name: 'HardSigmoid', alpha: 0.2, beta: 0.5 },
  relu: { name: 'Relu' },
  linear: { name: 'Affine', alpha: 1, beta: 0 },
  elu: { name: 'Elu', alpha: 1 },
  softsign: { name: 'Softsign' },
  softplus: { name: 'Softplus' },
};

/** The ONNX recurrent-op activation for a tfjs one; refuses those a cell cannot apply. */
export function rnnActivation(raw: unknown): RnnActivation {
  const act = RNN_ACTIVATIONS[activationKey(raw)];
  if (act === undefined)
    throw unsupported(`activation '${String(raw)}' inside a recurrent cell has no ONNX equivalent`);
  return act;
}
