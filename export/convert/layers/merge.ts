/**
 * Merge layers: Concatenate and the element-wise ones (Add, Subtract,
 * Multiply, Average, Maximum, Minimum). Keras lets them broadcast like numpy,
 * as the ONNX ops do.
 */
import { unsupported } from '../errors.ts';
import type { Shape } from '../model-json.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';

/** Numpy-broadcast shape of the inputs (unknown where any input's dim is unknown and none is known > 1). */
function broadcast(shapes: Shape[]): Shape {
  const rank = Math.max(...shapes.map((s) => s.length));
  return Array.from({ length: rank }, (_, i) => {
    const dims = shapes.map((s) => s[s.length - rank + i]).filter((d) => d !== undefined);
    const big = dims.find((d) => d !== null && d !== 1);
    if (big !== undefined) return big;
    return dims.every((d) => d === 1) ? 1 : null;
  });
}

function mergeInputs(ctx: LayerContext, min: number): Value[] {
  if (ctx.inputs.length < min) throw unsupported(`needs at least ${min} inputs, got ${ctx.inputs.length}`);
  return ctx.inputs;
}

/**
 * Element-wise merges of inputs x_1 … x_n:
 *   Add: y = Σ x_i · Multiply: y = Π x_i · Average: y = (Σ x_i) / n
 *   Maximum: y = max_i x_i · Minimum: y = min_i x_i · Subtract: y = x_1 - x_2
 */
const convertElementwise =
  (op: 'Sum' | 'Mul' | 'Mean' | 'Max' | 'Min' | 'Sub') =>
  (ctx: LayerContext): Value[] => {
    const xs = mergeInputs(ctx, 2);
    if (op === 'Sub' && xs.length !== 2) throw unsupported(`Subtract takes exactly 2 inputs, got ${xs.length}`);
    const names = xs.map((x) => x.name);
    // Mul and Sub are binary in ONNX; Sum, Mean, Max and Min are variadic.
    const y =
      op === 'Mul' ? names.slice(1).reduce((acc, n) => ctx.g.op('Mul', [acc, n]), names[0]!) : ctx.g.op(op, names);
    return [{ name: y, shape: broadcast(xs.map((x) => x.shape)), dtype: xs[0]!.dtype }];
  };

/** Concatenate: y = [x_1, …, x_n] along `axis` (-1 by default). */
function convertConcatenate(ctx: LayerContext): Value[] {
  const xs = mergeInputs(ctx, 1);
  const rank = xs[0]!.shape.length;
  const raw = ctx.config.number('axis', -1);
  const axis = raw < 0 ? raw + rank : raw;
  if (axis <= 0 || axis >= rank) throw unsupported(`axis ${raw} does not fit rank-${rank} inputs`);
  const shape = [...xs[0]!.shape];
  const sizes = xs.map((x) => x.shape[axis]);
  shape[axis] = sizes.every((d) => d !== null) ? (sizes as number[]).reduce((a, b) => a + b, 0) : null;
  return [
    {
      name: ctx.g.op(
        'Concat',
        xs.map((x) => x.name),
        { axis },
      ),
      shape,
      dtype: xs[0]!.dtype,
    },
  ];
}

registerLayerConverter('Add', convertElementwise('Sum'));
registerLayerConverter('Subtract', convertElementwise('Sub'));
registerLayerConverter('Multiply', convertElementwise('Mul'));
registerLayerConverter('Average', convertElementwise('Mean'));
registerLayerConverter('Maximum', convertElementwise('Max'));
registerLayerConverter('Minimum', convertElementwise('Min'));
registerLayerConverter('Concatenate', convertConcatenate);
