/**
 * FrostSoftmaxXentGrad (the contract is in models/loss.ts) for the wasm backend:
 * dlogits = w_i · probs_i − w_i ε' with w_i = dy · mask_i, and w_i (1 − ε − ε') taken off at the
 * target, in one wasm SIMD pass over the [N, |V|] tensor (the largest in the model) instead of
 * OneHot, Sub and a broadcast Multiply: [1856, 5921] ≈ 4 ms against 11-23 here. Without label
 * smoothing (ε = ε' = 0) the subtraction of 0 leaves every value as it was before smoothing existed.
 *
 * FrostSoftmaxXent: probs from XNNPACK's Softmax (a wasm SIMD softmax written the same way, max,
 * exp with its sum, scale, was no faster), and the value from the probabilities themselves:
 * mask_i · −log p_i[y_i], a JS loop over N rows. The ops instead find logsumexp from two more
 * full passes over [N, |V|] (max z and max p). Where p_i[y_i] is too small for its logarithm to
 * be as exact as the logsumexp form (below TINY_PROB, or 0 after underflow) that row is
 * summed the exact way, in float64 from its logits. With label smoothing the row's logsumexp is
 * z_i[y_i] + nll_i, and Σ_j z_ij comes from the wasm Sum kernel: one more pass over z, only then.
 */
import { getKernel, type KernelFunc, type TensorInfo } from '@tensorflow/tfjs-core';
import { SOFTMAX_XENT_GRAD_KERNEL, SOFTMAX_XENT_KERNEL, smoothedTargetWeights } from '../../../models/loss.ts';
import { f32, i32, ModuleBuilder, seq, when } from './wasm-builder.ts';
import { at, forEachRow, heapFunctions, heapOffset, lanesLoop } from './wasm-lanes.ts';
import {
  asWasmBackend,
  checkKernelInputs,
  f32View,
  numericView,
  ownedInput,
  tensorData,
  type CwrappedFn,
  type WasmBackend,
} from './wasm-internals.ts';

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  const f = m.func('xent_bwd', ['probs', 'out', 'targets', 'mask', 'dyBits', 'rows', 'cols', 'onBits', 'offBits']);
  const [probs, out, targets, mask, dyBits, rows, cols, onBits, offBits] = f.params;
  const n = f.local('i32');
  const rowBytes = f.local('i32');
  const pRow = f.local('i32');
  const oRow = f.local('i32');
  const w = f.local('f32');
  const wOff = f.local('f32');
  const y = f.local('i32');
  const yAddr = f.local('i32');
  const word = (base: typeof n) => i32.add(base.get(), i32.shl(n.get(), i32.const(2)));
  f.emit(
    rowBytes.set(i32.shl(cols.get(), i32.const(2))),
    forEachRow(
      n,
      rows,
      rowBytes,
      [
        [pRow, probs],
        [oRow, out],
      ],
      seq(
        // w = mask_n · dy; row = w · probs_n − w ε'; row[y_n] −= w (1 − ε − ε') (a target outside [0, |V|) is
        // skipped)
        w.set(f32.mul(f32.load(word(mask)), f32.reinterpretI32(dyBits.get()))),
        wOff.set(f32.mul(w.get(), f32.reinterpretI32(offBits.get()))),
        lanesLoop(f, rowBytes, (L, j) =>
          L.store(at(oRow, j), L.sub(L.mul(L.load(at(pRow, j)), L.splat(w.get())), L.splat(wOff.get()))),
        ),
        y.set(i32.load(word(targets))),
        when(
          i32.ltU(y.get(), cols.get()),
          seq(
            yAddr.set(i32.add(oRow.get(), i32.shl(y.get(), i32.const(2)))),
            f32.store(yAddr.get(), f32.sub(f32.load(yAddr.get()), f32.mul(w.get(), f32.reinterpretI32(onBits.get())))),
          ),
        ),
      ),
    ),
  );
  return m;
}

const softmaxFns = new WeakMap<WasmBackend, CwrappedFn>();

/** XNNPACK's softmax (the wasm backend's Softmax) over `x` in place: each pass reads a value before writing it. */
function softmaxOver(backend: WasmBackend, x: TensorInfo): void {
  let softmax = softmaxFns.get(backend);
  if (softmax == null) {
    softmax = backend.wasm.cwrap('Softmax', null, ['number', 'number', 'number', 'number']);
    softmaxFns.set(backend, softmax);
  }
  const id = tensorData(backend, x).id;
  const [N, V] = x.shape;
  softmax(id, id, V, N);
}

/** Per row, the largest logit: what a row's exact loss needs once its logits are overwritten. */
function rowMaxima(logits: TensorInfo, b: unknown): Float32Array {
  const max = getKernel('Max', 'wasm');
  if (max == null) throw new Error(`${SOFTMAX_XENT_KERNEL}: no wasm Max kernel`);
  const backend = asWasmBackend(b);
  const out = max.kernelFunc({
    inputs: { x: logits },
    backend: b as never,
    attrs: { reductionIndices: [1], keepDims: false },
  }) as TensorInfo;
  try {
    return f32View(backend, out).slice();
  } finally {
    backend.disposeData(out.dataId);
  }
}

/** A float32's bits as an int32, for passing it to the wasm function. */
function f32Bits(x: number): number {
  return new Int32Array(Float32Array.of(x).buffer)[0];
}

/** The smoothing attribute (absent: 0, the plain cross-entropy). */
function smoothingAttr(attrs: unknown): number {
  const eps = (attrs as { smoothing?: unknown } | undefined)?.smoothing;
  return typeof eps === 'number' ? eps : 0;
}

export const softmaxXentGradKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend: WasmBackend = asWasmBackend(b);
  checkKernelInputs(
    SOFTMAX_XENT_GRAD_KERNEL,
    inputs as Record<string, TensorInfo | undefined>,
    ['probs', 'targets', 'mask', 'dy'],
    ['targets'],
  );
  const { probs, targets, mask, dy } = inputs as Record<string, TensorInfo>;
  const [N, V] = probs.shape;
  // In place when the saved probabilities are this gradient's alone: xent_bwd reads each value before writing it.
  const out = ownedInput(backend, probs, attrs) ?? backend.makeOutput([N, V], 'float32');
  const dyBits = new Int32Array(f32View(backend, dy).slice(0, 1).buffer)[0];
  const { onTarget, offTarget } = smoothedTargetWeights(smoothingAttr(attrs), V);
  heapFunctions(backend, buildModule).xent_bwd(
    heapOffset(backend, probs),
    heapOffset(backend, out),
    heapOffset(backend, targets),
    heapOffset(backend, mask),
    dyBits,
    N,
    V,
    f32Bits(onTarget - offTarget),
    f32Bits(offTarget),
  );
  return [out];
};

/** Below this a probability's float32 rounding (relative 6e−8 of a normal number) is no longer the only error. */
const TINY_PROB = 1e-30;

/** logsumexp(z_row) − z_row[y] in float64. */
function exactRowLoss(z: Float32Array, row: number, V: number, y: number): number {
  const base = row * V;
  let max = -Infinity;
  for (let j = 0; j < V; j++) max = Math.max(max, z[base + j]);
  let sum = 0;
  for (let j = 0; j < V; j++) sum += Math.exp(z[base + j] - max);
  return max + Math.log(sum) - z[base + y];
}

/**
 * exactRowLoss once the row's logits are its probabilities: lse − z_y = (lse − max z) + (max z − z_y), and
 * lse − max z = −log max p, a probability of at least 1/|V|, so exact in float32 where p_y underflowed.
 */
function overwrittenRowLoss(p: Float32Array, row: number, V: number, maxLogit: number, targetLogit: number): number {
  let top = 0;
  for (let j = row * V; j < (row + 1) * V; j++) top = Math.max(top, p[j]);
  return -Math.log(top) + (maxLogit - targetLogit);
}

export const softmaxXentKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend: WasmBackend = asWasmBackend(b);
  checkKernelInputs(
    SOFTMAX_XENT_KERNEL,
    inputs as Record<string, TensorInfo | undefined>,
    ['logits', 'targets', 'mask'],
    ['targets'],
  );
  const { logits, targets, mask } = inputs as Record<string, TensorInfo>;
  const [N, V] = logits.shape;
  const smoothing = smoothingAttr(attrs);
  // Views are taken again after each allocation (one may grow the heap and detach them).
  const targetAt = () => numericView(backend, targets);
  const maskAt = () => f32View(backend, mask);
  {
    const [y, m] = [targetAt(), maskAt()];
    for (let i = 0; i < N; i++)
      if (m[i] !== 0 && !(y[i] >= 0 && y[i] < V))
        throw new RangeError(`${SOFTMAX_XENT_KERNEL}: target ${y[i]} of row ${i} is outside the vocabulary [0, ${V})`);
  }
  // What the value needs from the logits, read before the probabilities may overwrite them.
  const rowSums = smoothing > 0 ? sumRows(logits, b) : null;
  const targetLogits = new Float32Array(N);
  {
    const [y, m, z] = [targetAt(), maskAt(), f32View(backend, logits)];
    for (let i = 0; i < N; i++) if (m[i] !== 0) targetLogits[i] = z[i * V + y[i]];
  }
  let probs = ownedInput(backend, logits, attrs);
  const maxima = probs == null ? null : rowMaxima(logits, b);
  if (probs != null) softmaxOver(backend, probs);
  else {
    const softmax = getKernel('Softmax', 'wasm');
    if (softmax == null) throw new Error(`${SOFTMAX_XENT_KERNEL}: no wasm Softmax kernel`);
    probs = softmax.kernelFunc({
      inputs: { logits },
      backend: b,
      attrs: { dim: logits.shape.length - 1 },
    }) as TensorInfo;
  }
  const value = backend.makeOutput([], 'float32');
  const nllOut = backend.makeOutput([], 'float32');
  // Views after every output exists (an allocation may grow the heap).
  const [p, z, m] = [probs, logits, mask].map((t) => f32View(backend, t));
  const y = targetAt();
  const sums = rowSums ? f32View(backend, rowSums) : null;
  const { onTarget, offTarget } = smoothedTargetWeights(smoothing, V);
  let total = 0;
  let nllTotal = 0;
  for (let i = 0; i < N; i++) {
    if (m[i] === 0) continue;
    const t = y[i];
    const pt = p[i * V + t];
    const nll =
      pt >= TINY_PROB
        ? -Math.log(pt)
        : maxima
          ? overwrittenRowLoss(p, i, V, maxima[i], targetLogits[i])
          : exactRowLoss(z, i, V, t);
    nllTotal += m[i] * nll;
    if (sums) {
      const lse = targetLogits[i] + nll;
      total += m[i] * ((onTarget - offTarget) * nll + offTarget * (V * lse - sums[i]));
    }
  }
  if (rowSums) backend.disposeData(rowSums.dataId);
  f32View(backend, value)[0] = sums ? total : nllTotal;
  f32View(backend, nllOut)[0] = nllTotal;
  return [value, probs, nllOut];
};

/** Σ_j z_ij [N] through the backend's Sum kernel (one vectorised pass over z). */
function sumRows(logits: TensorInfo, b: Parameters<KernelFunc>[0]['backend']): TensorInfo {
  const sum = getKernel('Sum', 'wasm');
  if (sum == null) throw new Error(`${SOFTMAX_XENT_KERNEL}: no wasm Sum kernel`);
  return sum.kernelFunc({ inputs: { x: logits }, backend: b, attrs: { axis: [1], keepDims: false } }) as TensorInfo;
}
