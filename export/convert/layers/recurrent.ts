/**
 * Recurrent layers: SimpleRNN, GRU, LSTM (return_sequences, return_state,
 * go_backwards) and the Bidirectional wrapper, each as one ONNX RNN/GRU/LSTM
 * node (a Bidirectional layer as one `direction: bidirectional` node).
 *
 * Layouts: tfjs RNNs read [batch, time, features]; ONNX recurrent ops read
 * X [time, batch, features] and write Y [time, directions, batch, H] and
 * Y_h / Y_c [directions, batch, H]. The Transposes below convert.
 */
import type { GraphBuilder } from '../../../core/onnx/graph-builder.ts';
import { unsupported } from '../errors.ts';
import { LayerConfig } from '../layer-config.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';
import { stack } from '../weight-layout.ts';
import {
  cellParams,
  isRecurrentClass,
  RECURRENT_OPS,
  type CellParams,
  type RecurrentClass,
} from './recurrent-cells.ts';

/** Outputs of one ONNX recurrent node. */
interface RecurrentOutputs {
  /** Y: [time, directions, batch, H]. */
  y: string;
  /** Y_h: [directions, batch, H]. */
  yh: string;
  /** Y_c (LSTM): [directions, batch, H]. */
  yc?: string;
}

/**
 * Emits one ONNX recurrent node over `x` ([batch, time, in]) with one
 * CellParams per direction ('forward', 'reverse', or both for 'bidirectional').
 */
function emitRecurrent(
  ctx: LayerContext,
  className: RecurrentClass,
  x: Value,
  cells: CellParams[],
  direction: string,
): RecurrentOutputs {
  const { g } = ctx;
  const units = cells[0]!.R.shape[1]!;
  const activations = cells.flatMap((c) => c.activations);
  // ONNX consumes activation_alpha/beta in activation order, one per activation that takes it.
  const alphas = activations.filter((a) => a.alpha !== undefined).map((a) => a.alpha!);
  const betas = activations.filter((a) => a.beta !== undefined).map((a) => a.beta!);
  const op = RECURRENT_OPS[className];
  // X: [batch, time, in] → [time, batch, in]
  const X = g.op('Transpose', [x.name], { perm: [1, 0, 2] });
  const W = ctx.param('W', stack(cells.map((c) => c.W)));
  const R = ctx.param('R', stack(cells.map((c) => c.R)));
  const hasBias = cells[0]!.B !== undefined;
  const B = hasBias ? ctx.param('B', stack(cells.map((c) => ({ shape: [c.B!.length], data: c.B! })))) : '';
  const outputs = g.node(
    op,
    hasBias ? [X, W, R, B] : [X, W, R],
    {
      hidden_size: units,
      direction,
      activations: activations.map((a) => a.name),
      activation_alpha: alphas.length > 0 ? { floats: alphas } : undefined,
      activation_beta: betas.length > 0 ? { floats: betas } : undefined,
      linear_before_reset: op === 'GRU' ? cells[0]!.linearBeforeReset : undefined,
    },
    { outputs: op === 'LSTM' ? 3 : 2 },
  );
  return { y: outputs[0]!, yh: outputs[1]!, yc: outputs[2] };
}

/** Y of one direction, [time, 1, batch, H] → [batch, time, H]. */
function sequenceOf(g: GraphBuilder, y: string): string {
  return g.op('Transpose', [g.squeeze(y, [1])], { perm: [1, 0, 2] });
}

/** Reverses the time axis of [batch, time, H] (Slice with step -1). */
function reverseTime(g: GraphBuilder, seq: string): string {
  return g.slice(seq, [-1], [Number.MIN_SAFE_INTEGER], [1], [-1]);
}

/** The input, units and sequence length of a recurrent call (units from the RNN's `config`), checked. */
function recurrentInput(ctx: LayerContext, config: LayerConfig): { x: Value; units: number; time: number | null } {
  const x = ctx.input();
  if (x.shape.length !== 3) throw unsupported(`expects a [batch, time, features] input, got rank ${x.shape.length}`);
  return { x, units: config.number('units'), time: x.shape[1]! };
}

/**
 * SimpleRNN / GRU / LSTM.
 *   return_sequences: y = [h_1 … h_T] ([batch, time, H]), else y = h_T ([batch, H])
 *   return_state: outputs [y, h_T] (SimpleRNN, GRU) or [y, h_T, c_T] (LSTM)
 *   go_backwards: the cell reads x_T … x_1 (ONNX direction 'reverse')
 */
function convertRecurrent(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const className = ctx.className as RecurrentClass;
  const { x, units, time } = recurrentInput(ctx, config);
  const backwards = config.bool('go_backwards', false);
  const cell = cellParams(className, config, ctx.weights);
  const out = emitRecurrent(ctx, className, x, [cell], backwards ? 'reverse' : 'forward');
  const batch = x.shape[0]!;
  let y: Value;
  if (config.bool('return_sequences', false)) {
    let seq = sequenceOf(g, out.y);
    // Porting note: with go_backwards, tfjs returns the outputs in processing order (output k after
    // reading x_T … x_{T-k}); ONNX 'reverse' indexes Y by input time. So flip Y back along time.
    if (backwards) seq = reverseTime(g, seq);
    y = { name: seq, shape: [batch, time, units], dtype: 'float32' };
  } else {
    y = { name: g.squeeze(out.yh, [0]), shape: [batch, units], dtype: 'float32' };
  }
  if (!config.bool('return_state', false)) return [y];
  const state = (s: string): Value => ({ name: g.squeeze(s, [0]), shape: [batch, units], dtype: 'float32' });
  return out.yc === undefined ? [y, state(out.yh)] : [y, state(out.yh), state(out.yc)];
}

/** ONNX reductions for Bidirectional's merge modes other than concat. */
const MERGE_REDUCE: Record<string, string> = { sum: 'ReduceSum', mul: 'ReduceProd', ave: 'ReduceMean' };

/**
 * Bidirectional(layer, merge_mode): a forward copy of the RNN and a backward
 * one (go_backwards), whose output sequence tfjs flips back to input time.
 *   y_f = RNN_fwd(x), y_b = RNN_bwd(x) (aligned with input time)
 *   concat: y = [y_f, y_b] (last axis) · sum: y_f + y_b · mul: y_f ⊙ y_b · ave: (y_f + y_b) / 2
 *   merge_mode null: outputs [y_f, y_b]
 *   return_state: outputs [..., h_f, (c_f,) h_b, (c_b)]
 * = one ONNX node with direction 'bidirectional', whose Y already holds the
 * backward outputs at input time, as the merged tfjs output expects.
 */
function convertBidirectional(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const inner = config.get('layer') as { class_name?: string; config?: Record<string, unknown> } | undefined;
  const innerClass = inner?.class_name ?? '?';
  if (!isRecurrentClass(innerClass) || inner?.config === undefined)
    throw unsupported(`wraps a '${innerClass}' layer; only SimpleRNN, GRU and LSTM are supported`);
  const innerConfig = new LayerConfig(inner.config, ctx.name);
  if (innerConfig.bool('go_backwards', false))
    throw unsupported('wraps a go_backwards RNN (its "forward" half would run backwards)');
  const { x, units, time } = recurrentInput(ctx, innerConfig);
  const cells = [
    cellParams(innerClass, innerConfig, ctx.weights.under('forward_')),
    cellParams(innerClass, innerConfig, ctx.weights.under('backward_')),
  ];
  const out = emitRecurrent(ctx, innerClass, x, cells, 'bidirectional');
  const mode = config.get('merge_mode') === undefined ? 'concat' : config.get('merge_mode');
  const batch = x.shape[0]!;
  const sequences = innerConfig.bool('return_sequences', false);
  // Per-direction outputs on axis `dirAxis` of `both`: Y [time, 2, batch, H] or Y_h [2, batch, H].
  const both = sequences ? out.y : out.yh;
  const dirAxis = sequences ? 1 : 0;
  const shape = (h: number) => (sequences ? [batch, time, h] : [batch, h]);
  const toBatchFirst = (t: string): string => (sequences ? g.op('Transpose', [t], { perm: [1, 0, 2] }) : t);
  let outputs: Value[];
  if (mode === 'concat') {
    // [time, 2, batch, H] → [batch, time, 2, H] → [batch, time, 2H] (or [2, batch, H] → [batch, 2, H] → [batch, 2H])
    const batchFirst = g.op('Transpose', [both], { perm: sequences ? [2, 0, 1, 3] : [1, 0, 2] });
    const merged = g.op('Reshape', [batchFirst, g.constInt64(sequences ? [0, 0, 2 * units] : [0, 2 * units])]);
    outputs = [{ name: merged, shape: shape(2 * units), dtype: 'float32' }];
  } else if (typeof mode === 'string' && MERGE_REDUCE[mode] !== undefined) {
    const merged = toBatchFirst(g.reduce(MERGE_REDUCE[mode]!, both, [dirAxis], false));
    outputs = [{ name: merged, shape: shape(units), dtype: 'float32' }];
  } else if (mode === null) {
    const [f, b] = g.split(both, dirAxis, [1, 1]);
    outputs = [f!, b!].map((t) => ({
      name: toBatchFirst(g.squeeze(t, [dirAxis])),
      shape: shape(units),
      dtype: 'float32' as const,
    }));
  } else {
    throw unsupported(`merge_mode ${JSON.stringify(mode)} is not supported`);
  }
  if (!config.bool('return_state', innerConfig.bool('return_state', false))) return outputs;
  // state d of direction k: Gather(Y_h or Y_c, k) → [batch, H]
  const state = (s: string, k: number): Value => ({
    name: g.op('Gather', [s, g.constInt64(k, [])], { axis: 0 }),
    shape: [batch, units],
    dtype: 'float32',
  });
  const perDirection = (k: number): Value[] =>
    out.yc === undefined ? [state(out.yh, k)] : [state(out.yh, k), state(out.yc, k)];
  return [...outputs, ...perDirection(0), ...perDirection(1)];
}

for (const className of Object.keys(RECURRENT_OPS)) registerLayerConverter(className, convertRecurrent);
registerLayerConverter('Bidirectional', convertBidirectional);
