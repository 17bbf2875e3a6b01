/**
 * FrostLayerNorm and FrostLayerNormGrad (the contract is in models/layers/layer-norm.ts) for the wasm backend, as
 * JS loops over the heap: per row one pass for the mean and variance (float64 sums) and one that writes x̂ and y;
 * backward, one pass for Σ g and Σ g·x̂ (adding dy·x̂ and dy into dγ and dβ on the way) and one that writes dx.
 * The op graph they replace ran ≈ 10 kernels forward and ≈ 25 backward per layer norm, each a pass over
 * [rows, d] and a kernel call the engine books (≈ 0.15 ms each in a Transformer step).
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { LAYER_NORM_GRAD_KERNEL, LAYER_NORM_KERNEL } from '../../../models/layers/layer-norm.ts';
import { asWasmBackend, checkKernelInputs, f32View } from './wasm-internals.ts';

function rowsOf(kernel: string, x: TensorInfo, gamma: TensorInfo): { rows: number; d: number } {
  const d = x.shape[x.shape.length - 1];
  if (gamma.shape.length !== 1 || gamma.shape[0] !== d)
    throw new RangeError(`${kernel}: gamma must be [${d}], got [${gamma.shape.join(', ')}]`);
  return { rows: d === 0 ? 0 : util.sizeFromShape(x.shape) / d, d };
}

export const layerNormKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(LAYER_NORM_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['x', 'gamma', 'beta']);
  const { x, gamma, beta } = inputs as Record<string, TensorInfo>;
  const eps = Number((attrs as { epsilon?: number }).epsilon);
  const { rows, d } = rowsOf(LAYER_NORM_KERNEL, x, gamma);
  const y = backend.makeOutput(x.shape, 'float32');
  const unit = backend.makeOutput(x.shape, 'float32');
  const rstd = backend.makeOutput([rows], 'float32');
  // Views after makeOutput (it may grow the heap).
  const X = f32View(backend, x);
  const G = f32View(backend, gamma);
  const B = f32View(backend, beta);
  const Y = f32View(backend, y);
  const U = f32View(backend, unit);
  const R = f32View(backend, rstd);
  for (let r = 0, o = 0; r < rows; r++, o += d) {
    let sum = 0;
    for (let j = 0; j < d; j++) sum += X[o + j];
    const mean = sum / d;
    let sq = 0;
    for (let j = 0; j < d; j++) {
      const c = X[o + j] - mean;
      sq += c * c;
    }
    const s = 1 / Math.sqrt(sq / d + eps);
    R[r] = s;
    for (let j = 0; j < d; j++) {
      const u = (X[o + j] - mean) * s;
      U[o + j] = u;
      Y[o + j] = u * G[j] + B[j];
    }
  }
  return [y, unit, rstd];
};

export const layerNormGradKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(LAYER_NORM_GRAD_KERNEL, inputs as Record<string, TensorInfo | undefined>, [
    'dy',
    'unit',
    'rstd',
    'gamma',
  ]);
  const { dy, unit, rstd, gamma } = inputs as Record<string, TensorInfo>;
  const { rows, d } = rowsOf(LAYER_NORM_GRAD_KERNEL, unit, gamma);
  const dx = backend.makeOutput(unit.shape, 'float32');
  const dGamma = backend.makeOutput([d], 'float32');
  const dBeta = backend.makeOutput([d], 'float32');
  const DY = f32View(backend, dy);
  const U = f32View(backend, unit);
  const R = f32View(backend, rstd);
  const G = f32View(backend, gamma);
  const DX = f32View(backend, dx);
  // dγ and dβ in float64 while rows add up; float32 when written.
  const dg = new Float64Array(d);
  const db = new Float64Array(d);
  for (let r = 0, o = 0; r < rows; r++, o += d) {
    let sumG = 0;
    let sumGU = 0;
    for (let j = 0; j < d; j++) {
      const t = DY[o + j];
      const u = U[o + j];
      const g = t * G[j];
      sumG += g;
      sumGU += g * u;
      dg[j] += t * u;
      db[j] += t;
    }
    const meanG = sumG / d;
    const meanGU = sumGU / d;
    const s = R[r];
    for (let j = 0; j < d; j++) DX[o + j] = s * (DY[o + j] * G[j] - meanG - U[o + j] * meanGU);
  }
  f32View(backend, dGamma).set(dg);
  f32View(backend, dBeta).set(db);
  return [dx, dGamma, dBeta];
};
