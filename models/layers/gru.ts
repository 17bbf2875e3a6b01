import * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ParamStore } from '../params.ts';
import { tensorValue, transposed } from '../onnx-values.ts';
import { fusedMode, runFused } from './fused.ts';
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

export interface GruStepOptions {
  /** A second share of the input pre-activations, added to gx (the decoder's context share), [B, 3H]. */
  gx2?: tf.Tensor2D;
  /** [B, 1]: 1 for a real step, 0 for padding, where the row keeps h: h' = h + m ⊙ (cell(h) − h). */
  mask?: tf.Tensor2D;
}

/**
 * gruStep with h · Wh computed by `hWh`: a recurrence passes sharedWeightMatMul(w.Wh) (shared-matmul.ts)
 * so that Wh's gradient is one GEMM over all steps. The gate maths is one fused op (gruCell).
 */
export function gruStepWith(
  w: GruWeights,
  gx: tf.Tensor2D,
  h: tf.Tensor2D,
  hWh: StepMatMul,
  opts: GruStepOptions = {},
): tf.Tensor2D {
  if (fusedMode() === 'unfused') return gruStepUnfused(w, gx, h, hWh, opts);
  return gruCell(gx, opts.gx2, hWh(h), w.bh, h, opts.mask);
}

function gruStepUnfused(
  w: GruWeights,
  gx0: tf.Tensor2D,
  h: tf.Tensor2D,
  hWh: StepMatMul,
  { gx2, mask }: GruStepOptions,
): tf.Tensor2D {
  const H = w.hidden;
  const B = h.shape[0];
  const gx = gx2 == null ? gx0 : (tf.add(gx0, gx2) as tf.Tensor2D);
  const gh = tf.add(hWh(h), w.bh);
  const zr = tf.sigmoid(tf.add(tf.slice(gx, [0, 0], [B, 2 * H]), tf.slice(gh, [0, 0], [B, 2 * H])));
  const z = tf.slice(zr, [0, 0], [B, H]);
  const r = tf.slice(zr, [0, H], [B, H]);
  const n = tf.tanh(tf.add(tf.slice(gx, [0, 2 * H], [B, H]), tf.mul(r, tf.slice(gh, [0, 2 * H], [B, H]))));
  // (1 - z) n + z h, written with one fewer op.
  const cell = tf.add(n, tf.mul(z, tf.sub(h, n))) as tf.Tensor2D;
  return mask == null ? cell : tf.add(h, tf.mul(mask, tf.sub(cell, h)));
}

/**
 * The fused GRU cell's kernel contract (B rows, H units; all float32):
 *
 *   FrostGruCell      inputs  gx [B, 3H], gx2? [B, 3H], hw [B, 3H] (= h · Wh), bh [3H], h [B, H], mask? [B, 1]
 *                     outputs h' [B, H], cache [B, 4H] = [z | r | n | hw_n + bh_n]
 *   FrostGruCellGrad  inputs  dh' [B, H], cache [B, 4H], h [B, H], mask? [B, 1]
 *                     outputs dgx [B, 3H] (also gx2's), dhw [B, 3H], dh [B, H] (through the gates only;
 *                             h · Wh's share comes back through hw), dbh [3H]
 *
 * with  z = σ(gx_z + hw_z + bh_z), r = σ(gx_r + hw_r + bh_r), g = hw_n + bh_n, n = tanh(gx_n + r ⊙ g),
 *       h' = n + z ⊙ (h − n), then with a mask h' ← h + m ⊙ (h' − h);
 * backward (c = m ⊙ dh'):  dh = (dh' − c) + z ⊙ c,  dn = c ⊙ (1 − z),  dz = c ⊙ (h − n),
 *       dgx_n = dn ⊙ (1 − n²),  dgx_z = dhw_z = dz ⊙ z(1 − z),  dgx_r = dhw_r = dgx_n ⊙ g ⊙ r(1 − r),
 *       dhw_n = dgx_n ⊙ r,  dbh = Σ_rows dhw.
 */
export const GRU_CELL_KERNEL = 'FrostGruCell';
export const GRU_CELL_GRAD_KERNEL = 'FrostGruCellGrad';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** h' of one GRU step from its pre-activations, as one op with the gradient above. */
function gruCell(
  gx: tf.Tensor2D,
  gx2: tf.Tensor2D | undefined,
  hw: tf.Tensor2D,
  bh: tf.Tensor,
  h: tf.Tensor2D,
  mask?: tf.Tensor2D,
): tf.Tensor2D {
  const op = tf.customGrad(((...args: unknown[]) => {
    const save = args.pop() as tf.GradSaveFunc;
    const inputs: tf.NamedTensorMap = { gx, hw, bh, h };
    if (gx2 != null) inputs.gx2 = gx2;
    if (mask != null) inputs.mask = mask;
    const [hNext, cache] = runFused(GRU_CELL_KERNEL, inputs, () => gruCellOps(inputs));
    save(mask == null ? [cache, h] : [cache, h, mask]);
    return {
      value: hNext,
      gradFunc: (dy: tf.Tensor, [cacheS, hS, maskS]: tf.Tensor[]) => {
        const gradInputs: tf.NamedTensorMap = { dhNext: dy, cache: cacheS, h: hS };
        if (maskS != null) gradInputs.mask = maskS;
        const [dgx, dhw, dh, dbh] = runFused(GRU_CELL_GRAD_KERNEL, gradInputs, () => gruCellGradOps(gradInputs));
        // gx and gx2 each get their own tensor: the tape may add to and dispose one of them.
        return gx2 == null ? [dgx, dhw, dbh, dh] : [dgx, dgx.clone(), dhw, dbh, dh];
      },
    };
  }) as unknown as CustomGradFn);
  return (gx2 == null ? op(gx, hw, bh, h) : op(gx, gx2, hw, bh, h)) as tf.Tensor2D;
}

/** FrostGruCell as tfjs ops. */
export function gruCellOps({ gx, gx2, hw, bh, h, mask }: tf.NamedTensorMap): tf.Tensor[] {
  const [B, H] = h.shape;
  const x = gx2 == null ? gx : tf.add(gx, gx2);
  const gh = tf.add(hw, bh);
  const zr = tf.sigmoid(tf.add(tf.slice(x, [0, 0], [B, 2 * H]), tf.slice(gh, [0, 0], [B, 2 * H])));
  const [z, r] = tf.split(zr, 2, 1);
  const g = tf.slice(gh, [0, 2 * H], [B, H]);
  const n = tf.tanh(tf.add(tf.slice(x, [0, 2 * H], [B, H]), tf.mul(r, g)));
  const cell = tf.add(n, tf.mul(z, tf.sub(h, n)));
  return [mask == null ? cell : tf.add(h, tf.mul(mask, tf.sub(cell, h))), tf.concat([z, r, n, g], 1)];
}

/** FrostGruCellGrad as tfjs ops. */
export function gruCellGradOps({ dhNext, cache, h, mask }: tf.NamedTensorMap): tf.Tensor[] {
  const [z, r, n, g] = tf.split(cache, 4, 1);
  const c = mask == null ? dhNext : tf.mul(dhNext, mask);
  const dh = mask == null ? tf.mul(z, dhNext) : tf.add(tf.sub(dhNext, c), tf.mul(z, c));
  const dxn = tf.mul(tf.mul(c, tf.sub(1, z)), tf.sub(1, tf.square(n)));
  const dz = tf.mul(tf.mul(c, tf.sub(h, n)), tf.mul(z, tf.sub(1, z)));
  const dr = tf.mul(tf.mul(dxn, g), tf.mul(r, tf.sub(1, r)));
  const dhw = tf.concat([dz, dr, tf.mul(dxn, r)], 1);
  return [tf.concat([dz, dr, dxn], 1), dhw, dh, tf.sum(dhw, 0)];
}

/** ONNX GRU initializers W [dirs, 3H, in], R [dirs, 3H, H], B [dirs, 6H] for one or two directions. */
export function gruOnnxWeights(directions: GruWeights[]): {
  W: Float32Array;
  R: Float32Array;
  B: Float32Array;
  input: number;
} {
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

/**
 * One GRU step as plain ONNX ops, for a decoder that steps one token at a time (rows x [rows, in],
 * h [rows, H]): the same maths as a GRU node with linear_before_reset = 1 over one time step, but its
 * two matrix products are Gemm nodes over `prefix/Wx` [in, 3H] and `prefix/Wh` [H, 3H], which
 * `--precision int8-compute` turns into integer kernels (onnxruntime has none for a GRU node).
 *   gx = x Wx + bx,  hw = h Wh + bh                      (gates ordered z, r, n)
 *   z, r = σ(gx_zr + hw_zr),  n = tanh(gx_n + r ⊙ hw_n),  h' = n + z ⊙ (h − n)
 */
export function gruStepOnnx(g: GraphBuilder, w: GruWeights, prefix: string, x: string, h: string): string {
  const H = w.hidden;
  const weight = (name: string, v: tf.Variable) => g.initializer(`${prefix}/${name}`, tensorValue(v));
  const gx = g.op('Gemm', [x, weight('Wx', w.Wx), weight('bx', w.bx)]);
  const hw = g.op('Gemm', [h, weight('Wh', w.Wh), weight('bh', w.bh)]);
  const [gxZr, gxN] = g.split(gx, 1, [2 * H, H]);
  const [hwZr, hwN] = g.split(hw, 1, [2 * H, H]);
  const [z, r] = g.split(g.op('Sigmoid', [g.op('Add', [gxZr!, hwZr!])]), 1, [H, H]);
  const n = g.op('Tanh', [g.op('Add', [gxN!, g.op('Mul', [r!, hwN!])])]);
  return g.op('Add', [n, g.op('Mul', [z!, g.op('Sub', [h, n])])]);
}
