/**
 * frost's frozen output heads as tfjs-layers custom layers, so a plain tfjs LayersModel can end in
 * one and `frost convert` can export it (export/convert/layers/frost-heads.ts):
 *
 * - `FrostFixedHead` ({ units, kind: 'fixed-uniform' | 'fixed-l2', seed, limit? }): logits =
 *   f · targetsᵀ, no bias, targets the [units, d] matrix that models/heads/fixed-uniform.ts or
 *   fixed-l2.ts builds from the same seed (core/random.ts). No weights at all: the matrix is a plain
 *   tensor rebuilt from the config, never saved.
 * - `FrostHadamardHead` ({ units, seed }): logits = scale · (f / ‖f‖) · Hᵀ as models/heads/hadamard.ts,
 *   H the Hadamard rows restricted to chooseHadamardColumns(n, d, seed); one trainable weight `scale`
 *   [1], initially 1/√units.
 *
 * Input [batch, d] or [batch, time, d]; output [batch, units] or [batch, time, units].
 * Importing this module registers both classes with tf.serialization, so tf.loadLayersModel reads
 * models that use them.
 */
import * as tf from '@tensorflow/tfjs';
import { chooseHadamardColumns, hadamardOrder, hadamardRows } from '../../core/hadamard.ts';
import { l2NormaliseRows, streamKey, uniformMatrix } from '../../core/random.ts';
import { DEFAULT_FIXED_LIMIT, FROST_FIXED_KINDS, HADAMARD_EPS, type FrostFixedKind } from './frost-heads-config.ts';

export { type FrostFixedKind };

type LayerArgs = NonNullable<ConstructorParameters<typeof tf.layers.Layer>[0]>;
type Shape = (number | null)[];

export interface FrostFixedHeadArgs extends LayerArgs {
  /** |V|: how many logits. */
  units: number;
  kind: FrostFixedKind;
  /** uint32 seed of the frozen matrix. */
  seed: number;
  /** fixed-uniform only: cells uniform in [-limit, limit] (default 10). */
  limit?: number;
}

export interface FrostHadamardHeadArgs extends LayerArgs {
  units: number;
  /** uint32 seed of the column choice. */
  seed: number;
}

function checkUnits(units: unknown): number {
  if (!Number.isInteger(units) || (units as number) < 1)
    throw new Error(`'units' must be a positive integer, got ${String(units)}`);
  return units as number;
}

function checkSeed(seed: unknown): number {
  if (!Number.isInteger(seed) || (seed as number) < 0 || (seed as number) > 0xffffffff) {
    throw new Error(`'seed' must be an integer in [0, 2^32), got ${String(seed)}`);
  }
  return seed as number;
}

/** The one input shape of a call (a list of shapes must hold exactly one). */
function oneShape(layer: string, inputShape: tf.Shape | tf.Shape[]): Shape {
  if (!Array.isArray(inputShape[0])) return inputShape as Shape;
  if (inputShape.length !== 1) throw new Error(`${layer} takes a single input, got ${inputShape.length}`);
  return inputShape[0] as Shape;
}

/** d, the last axis of a [batch, d] or [batch, time, d] input shape; refuses anything else. */
function featureDim(layer: string, inputShape: tf.Shape | tf.Shape[]): number {
  const shape = oneShape(layer, inputShape);
  const text = `[${shape.map(String).join(', ')}]`;
  if (shape.length !== 2 && shape.length !== 3)
    throw new Error(`${layer} takes [batch, d] or [batch, time, d] features, got shape ${text}`);
  const d = shape[shape.length - 1];
  if (d == null) throw new Error(`${layer} needs a known feature size d, got shape ${text}`);
  return d;
}

const outputShape = (layer: string, inputShape: tf.Shape | tf.Shape[], units: number): tf.Shape => [
  ...oneShape(layer, inputShape).slice(0, -1),
  units,
];

/** y = x · m over the last axis of x (rank 2 or 3), m [d, units]. */
function matMulLast(x: tf.Tensor, m: tf.Tensor2D): tf.Tensor {
  if (x.rank === 2) return tf.matMul(x as tf.Tensor2D, m);
  const [b, t, d] = x.shape as [number, number, number];
  return tf.reshape(tf.matMul(tf.reshape(x, [b * t, d]), m), [b, t, m.shape[1]]);
}

const single = (inputs: tf.Tensor | tf.Tensor[]): tf.Tensor => (Array.isArray(inputs) ? inputs[0]! : inputs);

/** The frozen target matrix of a fixed head, row-major [units, d], exactly as models/heads builds it. */
export function frostFixedTargets(
  kind: FrostFixedKind,
  units: number,
  d: number,
  seed: number,
  limit = DEFAULT_FIXED_LIMIT,
): Float32Array {
  const key = streamKey(seed, kind);
  if (kind === 'fixed-uniform') return uniformMatrix(key, units, d, -limit, limit);
  return l2NormaliseRows(uniformMatrix(key, units, d, -1, 1), units, d);
}

/** f · targetsᵀ with a frozen, seeded target matrix (models/heads/fixed-uniform.ts, fixed-l2.ts). */
export class FrostFixedHead extends tf.layers.Layer {
  static className = 'FrostFixedHead';
  readonly units: number;
  readonly kind: FrostFixedKind;
  readonly seed: number;
  readonly limit: number | undefined;
  /** targetsᵀ [d, units], built on first use (not a weight: it is never saved). */
  private targetsT: tf.Tensor2D | null = null;

  constructor(args: FrostFixedHeadArgs) {
    super(args);
    this.units = checkUnits(args.units);
    if (!FROST_FIXED_KINDS.includes(args.kind))
      throw new Error(`'kind' must be one of ${FROST_FIXED_KINDS.join(', ')}, got ${String(args.kind)}`);
    this.kind = args.kind;
    this.seed = checkSeed(args.seed);
    if (args.limit != null) {
      if (args.kind !== 'fixed-uniform')
        throw new Error(`'limit' applies to kind 'fixed-uniform' only, not '${args.kind}'`);
      if (!(typeof args.limit === 'number' && Number.isFinite(args.limit) && args.limit > 0))
        throw new Error(`'limit' must be a positive number, got ${String(args.limit)}`);
    }
    this.limit = args.limit ?? undefined;
  }

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const d = featureDim(this.name, inputShape);
    if (this.targetsT === null) {
      const targets = frostFixedTargets(this.kind, this.units, d, this.seed, this.limit);
      this.targetsT = tf.keep(tf.tidy(() => tf.transpose(tf.tensor2d(targets, [this.units, d]))));
    }
    this.built = true;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape {
    return outputShape(this.name, inputShape, this.units);
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const x = single(inputs);
      if (this.targetsT === null) this.build(x.shape);
      return matMulLast(x, this.targetsT!);
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    const own: tf.serialization.ConfigDict = { units: this.units, kind: this.kind, seed: this.seed };
    if (this.limit !== undefined) own.limit = this.limit;
    return { ...super.getConfig(), ...own };
  }

  override dispose(): ReturnType<tf.layers.Layer['dispose']> {
    const result = super.dispose();
    if (result.refCountAfterDispose === 0 && this.targetsT !== null) {
      this.targetsT.dispose();
      this.targetsT = null;
    }
    return result;
  }
}

/** scale · (f / ‖f‖) · Hᵀ, H seeded Hadamard rows (models/heads/hadamard.ts). */
export class FrostHadamardHead extends tf.layers.Layer {
  static className = 'FrostHadamardHead';
  readonly units: number;
  readonly seed: number;
  private scale: tf.LayerVariable | null = null;
  /** Hᵀ [d, units], built with the layer (not a weight). */
  private hadamardT: tf.Tensor2D | null = null;

  constructor(args: FrostHadamardHeadArgs) {
    super(args);
    this.units = checkUnits(args.units);
    this.seed = checkSeed(args.seed);
  }

  override build(inputShape: tf.Shape | tf.Shape[]): void {
    const d = featureDim(this.name, inputShape);
    const n = hadamardOrder(this.units, d);
    const columns = chooseHadamardColumns(n, d, this.seed);
    const rows = hadamardRows(this.units, columns);
    if (this.hadamardT === null)
      this.hadamardT = tf.keep(tf.tidy(() => tf.transpose(tf.tensor2d(rows, [this.units, d]))));
    this.scale ??= this.addWeight(
      'scale',
      [1],
      'float32',
      tf.initializers.constant({ value: 1 / Math.sqrt(this.units) }),
    );
    this.built = true;
  }

  override computeOutputShape(inputShape: tf.Shape | tf.Shape[]): tf.Shape {
    return outputShape(this.name, inputShape, this.units);
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    return tf.tidy(() => {
      const f = single(inputs);
      if (this.hadamardT === null) this.build(f.shape);
      const norm = tf.sqrt(tf.add(tf.sum(tf.square(f), -1, true), HADAMARD_EPS));
      return tf.mul(matMulLast(tf.div(f, norm), this.hadamardT!), this.scale!.read());
    });
  }

  override getConfig(): tf.serialization.ConfigDict {
    return { ...super.getConfig(), units: this.units, seed: this.seed };
  }

  override dispose(): ReturnType<tf.layers.Layer['dispose']> {
    const result = super.dispose();
    if (result.refCountAfterDispose === 0 && this.hadamardT !== null) {
      this.hadamardT.dispose();
      this.hadamardT = null;
    }
    return result;
  }
}

tf.serialization.registerClass(FrostFixedHead);
tf.serialization.registerClass(FrostHadamardHead);
