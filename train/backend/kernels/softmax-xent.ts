/**
 * The loss's fused kernels for the wasm backend (names and contract: models/loss.ts).
 *
 * Forward, per row of the [N, |V|] logits: max, e = exp(z − max) written as it is summed, then
 * scaled by 1/Σe into the saved softmax, and nll = max + log Σe − z[y]: three passes over the row,
 * where the op-by-op version (Max, Sub, Exp, Sum, Log, Add, Div, Gather) made eight, two of them
 * exponentials in the stock kernel (13-18 ns an element). Backward: one pass, scale·p with scale
 * subtracted at the label; no one-hot [N, |V|] tensor, no float cast of it.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { fastExp } from './elementwise.ts';
import { asWasmBackend, f32View, numericView } from './wasm-internals.ts';

export function softmaxXentInto(z: Float32Array, labels: ArrayLike<number>, nll: Float32Array, probs: Float32Array, N: number, V: number): void {
  for (let i = 0, row = 0; i < N; i++, row += V) {
    let max = -Infinity;
    for (let j = 0; j < V; j++) if (z[row + j] > max) max = z[row + j];
    if (max === -Infinity || max !== max) max = 0; // all −∞ (or NaN): let the NaN/∞ propagate below
    let sum = 0;
    for (let j = 0; j < V; j++) {
      const e = fastExp(z[row + j] - max);
      probs[row + j] = e;
      sum += e;
    }
    const inv = 1 / sum;
    for (let j = 0; j < V; j++) probs[row + j] *= inv;
    const y = labels[i];
    nll[i] = max + Math.log(sum) - (y >= 0 && y < V ? z[row + y] : NaN);
  }
}

export function softmaxXentGradInto(p: Float32Array, labels: ArrayLike<number>, scale: Float32Array, out: Float32Array, N: number, V: number): void {
  for (let i = 0, row = 0; i < N; i++, row += V) {
    const s = scale[i];
    for (let j = 0; j < V; j++) out[row + j] = p[row + j] * s;
    const y = labels[i];
    if (y >= 0 && y < V) out[row + y] = (p[row + y] - 1) * s;
  }
}

export const softmaxXent: KernelFunc = ({ inputs, backend: anyBackend }) => {
  const backend = asWasmBackend(anyBackend);
  const { logits, labels } = inputs as { logits: TensorInfo; labels: TensorInfo };
  if (logits.dtype !== 'float32' || logits.shape.length !== 2) throw new Error('FrostSoftmaxCrossEntropy: logits must be float32 [N, V]');
  const [N, V] = logits.shape;
  const nll = backend.makeOutput([N], 'float32');
  const probs = backend.makeOutput([N, V], 'float32');
  // Views after the allocations (they may grow the heap).
  softmaxXentInto(f32View(backend, logits), numericView(backend, labels), f32View(backend, nll), f32View(backend, probs), N, V);
  return [nll, probs];
};

export const softmaxXentGrad: KernelFunc = ({ inputs, backend: anyBackend }) => {
  const backend = asWasmBackend(anyBackend);
  const { probs, labels, scale } = inputs as { probs: TensorInfo; labels: TensorInfo; scale: TensorInfo };
  const [N, V] = probs.shape;
  const out = backend.makeOutput([N, V], 'float32');
  softmaxXentGradInto(f32View(backend, probs), numericView(backend, labels), f32View(backend, scale), f32View(backend, out), N, V);
  return out;
};
