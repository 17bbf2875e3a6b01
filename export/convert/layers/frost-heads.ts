/**
 * frost's own output heads as custom layers (models/tfjs-layers/frost-heads.ts): FrostFixedHead and
 * FrostHadamardHead. Their frozen matrices are not in weights.bin; the graph regenerates them from
 * the config's seed with the same emitters the frost head export uses (models/heads/
 * seeded-matrix-onnx.ts, hadamard-onnx.ts), so the file stores a stream key or d column numbers
 * instead of a [units, d] matrix. Only the Hadamard head's learned `scale` comes from the weights.
 */
import { chooseHadamardColumns, hadamardOrder } from '../../../core/hadamard.ts';
import { streamKey } from '../../../core/random.ts';
import { hadamardScoresOnnx } from '../../../models/heads/hadamard-onnx.ts';
import { l2NormaliseRowsOnnx, seededUniformMatrixOnnx } from '../../../models/heads/seeded-matrix-onnx.ts';
import {
  DEFAULT_FIXED_LIMIT,
  FROST_FIXED_KINDS,
  HADAMARD_EPS,
  type FrostFixedKind,
} from '../../../models/tfjs-layers/frost-heads-config.ts';
import { unsupported } from '../errors.ts';
import { registerLayerConverter, type LayerContext, type Value } from '../registry.ts';

/** The input as [rows, d] (rank 2, or rank 3 flattened over batch and time), with d. */
function features(ctx: LayerContext): { x: Value; rows: string; d: number } {
  const x = ctx.input();
  if (x.shape.length !== 2 && x.shape.length !== 3)
    throw unsupported(`input of rank ${x.shape.length} (takes [batch, d] or [batch, time, d])`);
  const d = x.shape[x.shape.length - 1];
  if (d == null) throw unsupported('input with an unknown feature size d');
  const rows = x.shape.length === 2 ? x.name : ctx.g.op('Reshape', [x.name, ctx.g.constInt64([-1, d], [2], 'shape')]);
  return { x, rows, d };
}

/** Logits [rows, units] back to the input's leading dims: [batch, units] or [batch, time, units]. */
function logits(ctx: LayerContext, x: Value, y: string, units: number): Value[] {
  const shape = [...x.shape.slice(0, -1), units];
  if (x.shape.length === 2) return [{ name: y, shape, dtype: 'float32' }];
  const { g } = ctx;
  // [batch, time] of the input (either may be dynamic), then units
  const lead = g.slice(g.op('Shape', [x.name]), [0], [x.shape.length - 1], [0]);
  const target = g.op('Concat', [lead, g.constInt64([units], [1], 'units')], { axis: 0 });
  return [{ name: g.op('Reshape', [y, target]), shape, dtype: 'float32' }];
}

function uint32Seed(ctx: LayerContext): number {
  const seed = ctx.config.number('seed');
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw new Error(`config seed = ${seed} is not a uint32`);
  return seed;
}

function positiveUnits(ctx: LayerContext): number {
  const units = ctx.config.number('units');
  if (!Number.isInteger(units) || units < 1) throw new Error(`config units = ${units} is not a positive integer`);
  return units;
}

/**
 * FrostFixedHead: logits = f · targetsᵀ, targets [units, d] = uniformMatrix(streamKey(seed, kind),
 * …) (row-normalised for fixed-l2), regenerated in the graph.
 */
function convertFrostFixedHead(ctx: LayerContext): Value[] {
  const { g, config } = ctx;
  const units = positiveUnits(ctx);
  const kind = config.string('kind') as FrostFixedKind;
  if (!FROST_FIXED_KINDS.includes(kind)) throw unsupported(`kind '${kind}' (known: ${FROST_FIXED_KINDS.join(', ')})`);
  const seed = uint32Seed(ctx);
  if (g.opset < 18)
    throw unsupported(`regenerating the frozen matrix needs opset 18 (BitwiseXor), converting at ${g.opset}`);
  const { x, rows, d } = features(ctx);
  const key = streamKey(seed, kind);
  let targets: string;
  if (kind === 'fixed-uniform') {
    const limit = config.number('limit', DEFAULT_FIXED_LIMIT);
    targets = seededUniformMatrixOnnx(g, { key, rows: units, cols: d, lo: -limit, hi: limit });
  } else {
    targets = l2NormaliseRowsOnnx(g, seededUniformMatrixOnnx(g, { key, rows: units, cols: d, lo: -1, hi: 1 }), d);
  }
  // f · targetsᵀ (the regenerated matrix is folded into an initializer at session creation)
  return logits(ctx, x, g.op('Gemm', [rows, targets], { transB: 1 }), units);
}

/**
 * FrostHadamardHead: logits = scale · (f / sqrt(Σ f² + eps)) · Hᵀ, H the Hadamard rows on the seeded
 * columns, computed by structured ops; `scale` [1] is the layer's one weight.
 */
function convertFrostHadamardHead(ctx: LayerContext): Value[] {
  const { g } = ctx;
  const units = positiveUnits(ctx);
  const seed = uint32Seed(ctx);
  const { x, rows, d } = features(ctx);
  const n = hadamardOrder(units, d);
  const columns = chooseHadamardColumns(n, d, seed);
  // unit = f / sqrt(Σ_k f_k² + eps)
  const sq = g.reduce('ReduceSum', g.op('Mul', [rows, rows]), [1], true);
  const unit = g.op('Div', [rows, g.op('Sqrt', [g.op('Add', [sq, g.constFloat(HADAMARD_EPS)])])]);
  // scores = unit · Hᵀ
  const scores = hadamardScoresOnnx(g, unit, { rows: units, order: n, columns });
  // logits = scores · scale
  const y = g.op('Mul', [scores, ctx.param('scale', ctx.weights.get('scale', [1]))]);
  return logits(ctx, x, y, units);
}

registerLayerConverter('FrostFixedHead', convertFrostFixedHead);
registerLayerConverter('FrostHadamardHead', convertFrostHadamardHead);
