/**
 * TimeDistributed, the generic wrapper: it runs any convertible layer on
 * every time step. (Bidirectional, which only wraps RNNs, is in recurrent.ts.)
 */
import { unsupported } from '../errors.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';

/**
 * TimeDistributed(layer): y[:, t] = layer(x[:, t]) for every step t, by
 * folding time into the batch:
 *   x [batch, time, …] → [batch·time, …] → layer → [batch·time, …out] → [batch, time, …out]
 * The reshapes read the dims from Shape, so unknown batch and time work.
 */
function convertTimeDistributed(ctx: LayerContext): Value[] {
  const { g } = ctx;
  const x = ctx.input();
  if (x.shape.length < 3) throw unsupported(`expects a [batch, time, ...] input, got rank ${x.shape.length}`);
  const inner = ctx.config.get('layer') as { class_name?: unknown; config?: unknown } | undefined;
  if (typeof inner?.class_name !== 'string' || typeof inner.config !== 'object' || inner.config === null) {
    throw unsupported('has no wrapped layer config');
  }
  const END = Number.MAX_SAFE_INTEGER;
  const xShape = g.op('Shape', [x.name]);
  // [batch, time, …] → [batch·time, …]
  const folded = g.op('Reshape', [
    x.name,
    g.op('Concat', [g.constInt64([-1]), g.slice(xShape, [2], [END])], { axis: 0 }),
  ]);
  const [batch, time] = x.shape;
  const foldedBatch = batch != null && time != null ? batch * time : null;
  const input: Value = { ...x, name: folded, shape: [foldedBatch, ...x.shape.slice(2)] };
  const outs = ctx.convertInner(
    { className: inner.class_name, config: inner.config as Record<string, unknown> },
    [input],
    ctx.weights,
  );
  if (outs.length !== 1) throw unsupported(`wrapped layer has ${outs.length} outputs; TimeDistributed needs 1`);
  const y = outs[0]!;
  // [batch·time, …out] → [batch, time, …out]
  const unfoldShape = g.op('Concat', [g.slice(xShape, [0], [2]), g.slice(g.op('Shape', [y.name]), [1], [END])], {
    axis: 0,
  });
  return [{ ...y, name: g.op('Reshape', [y.name, unfoldShape]), shape: [batch!, time!, ...y.shape.slice(1)] }];
}

registerLayerConverter('TimeDistributed', convertTimeDistributed);
