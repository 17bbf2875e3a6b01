/**
 * BatchMatMul and _FusedMatMul for the wasm backend that always reach XNNPACK's GEMM.
 *
 * The stock C++ kernel (tfjs-backend-wasm 4.22, src/cc/batch_mat_mul_impl.cc) uses XNNPACK only
 * when transposeA = transposeB = false and both operands have batch 1; every other case runs a
 * scalar triple loop that reads the transposed operand with a stride (transposeA: 1.0 GFLOP/s,
 * transposeB: 1.5, vs 15-26 for XNNPACK on 512³). MatMul's gradients are exactly those cases.
 *
 * Here: transpose the operand that needs it once into a fresh buffer (O(rows·cols), memory bound),
 * then
 *  - b has batch 1: fold a's batch into its rows, [batch·M, K] × [K, N], one stock XNNPACK call;
 *  - b is batched: one XNNPACK call per batch entry, on C++ tensor ids registered over slices of
 *    the operands and of the output (no copies), broadcasting batch axes of size 1.
 *  - tiny batched products (per-entry work below SLICE_MIN_MACS) stay with the stock loop: per-call
 *    XNNPACK set-up (packing b's slice) costs more than it saves, and so would the transposes.
 * Transposed weights are kept between calls (TransposeCache in transpose.ts).
 *
 * With a native GEMM runner (native-gemm.ts), large products go to it as one 2-D GEMM, and batched products
 * (the Transformer's multi-head attention: q·kᵀ and α·v per sentence and head, and their gradients, e.g.
 * [780, 21, 64] × [780, 21, 64]ᵀ) as one native call per batch entry, each entry's transposes passed to
 * the library: the stock loop ran those at ≈ 1 GMAC/s, the runner's per-entry calls 7-12× faster
 * (OpenBLAS, 1 thread, 780 entries of 21×21×64 or 21×64×21: 60 → 5 ms). Only entries worth a call
 * (NativeGemm.minEntryMacs: MLAS's calls cost 25× OpenBLAS's) go there.
 */
import type { KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs-core';
import { broadcast_util, getKernel, util } from '@tensorflow/tfjs-core';
import { nativeGemm, setNativeGemm, type NativeGemm } from './native-gemm.ts';
import { transposeCache } from './transpose.ts';
import {
  asWasmBackend,
  f32View,
  registerView,
  releaseView,
  shapeBytes,
  tensorData,
  withShape,
  type CwrappedFn,
  type WasmBackend,
  type WasmModule,
} from './wasm-internals.ts';

/**
 * Below this many multiply-adds per batch entry the stock loop wins over per-entry XNNPACK calls.
 * Measured (1 thread): an XNNPACK call that creates its operator (packs b's slice) costs ≈ 60 µs
 * more than the GEMM itself; the stock loop runs ≈ 0.9 GMAC/s; break-even ≈ 55 k MACs.
 */
export const SLICE_MIN_MACS = 65_536;

export interface MatMulDims {
  M: number;
  K: number;
  N: number;
  batchA: number;
  batchB: number;
  /** Broadcast batch shape of the output. */
  batchShape: number[];
  outShape: number[];
}

function matMulDims(a: TensorInfo, b: TensorInfo, transposeA: boolean, transposeB: boolean): MatMulDims {
  const ra = a.shape.length;
  const rb = b.shape.length;
  const M = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
  const K = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
  const Kb = transposeB ? b.shape[rb - 1] : b.shape[rb - 2];
  const N = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
  util.assert(
    K === Kb,
    () =>
      `Error in matMul: inner shapes (${K}) and (${Kb}) of Tensors with shapes ${a.shape} and ${b.shape} ` +
      `and transposeA=${transposeA} and transposeB=${transposeB} must match.`,
  );
  const batchShape = broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
  return {
    M,
    K,
    N,
    batchA: util.sizeFromShape(a.shape.slice(0, -2)),
    batchB: util.sizeFromShape(b.shape.slice(0, -2)),
    batchShape,
    outShape: [...batchShape, M, N],
  };
}

const rawBatchMatMuls = new WeakMap<WasmModule, CwrappedFn>();

/** The C++ BatchMatMul entry point, called with tensor ids (same signature the stock JS uses). */
function rawBatchMatMul(backend: WasmBackend): CwrappedFn {
  let fn = rawBatchMatMuls.get(backend.wasm);
  if (fn == null) {
    fn = backend.wasm.cwrap('BatchMatMul', null, [
      'number',
      'array',
      'number',
      'number',
      'array',
      'number',
      'number',
      'number',
      'number',
    ]);
    rawBatchMatMuls.set(backend.wasm, fn);
  }
  return fn;
}

/** For each output batch entry, the flat batch index into an operand with batch shape `own`. */
function broadcastIndices(own: number[], out: number[]): Int32Array {
  const total = util.sizeFromShape(out);
  const idx = new Int32Array(total);
  const offset = out.length - own.length;
  const ownStrides = new Array<number>(own.length).fill(0);
  for (let i = own.length - 1, s = 1; i >= 0; i--) {
    ownStrides[i] = own[i] === 1 ? 0 : s;
    s *= own[i];
  }
  for (let o = 0; o < total; o++) {
    let rem = o;
    let flat = 0;
    for (let d = out.length - 1; d >= 0; d--) {
      const coord = rem % out[d];
      rem = Math.floor(rem / out[d]);
      const od = d - offset;
      if (od >= 0) flat += coord * ownStrides[od];
    }
    idx[o] = flat;
  }
  return idx;
}

function zeros(backend: WasmBackend, shape: number[]): TensorInfo {
  const out = backend.makeOutput(shape, 'float32');
  f32View(backend, out).fill(0);
  return out;
}

/** Batched A [..., M, K] × B [..., K, N] (both untransposed, b batched), one XNNPACK call per entry. */
function slicedMatMul(backend: WasmBackend, A: TensorInfo, B: TensorInfo, d: MatMulDims): TensorInfo {
  const { M, K, N, batchShape, outShape } = d;
  const out = backend.makeOutput(outShape, 'float32');
  const aIdx = broadcastIndices(A.shape.slice(0, -2), batchShape);
  const bIdx = broadcastIndices(B.shape.slice(0, -2), batchShape);
  const aBase = tensorData(backend, A).memoryOffset;
  const bBase = tensorData(backend, B).memoryOffset;
  const oBase = tensorData(backend, out).memoryOffset;
  const raw = rawBatchMatMul(backend);
  const aShape = shapeBytes([1, M, K]);
  const bShape = shapeBytes([1, K, N]);
  const aIds = new Map<number, number>();
  const bIds = new Map<number, number>();
  const view = (ids: Map<number, number>, base: number, i: number, size: number): number => {
    let id = ids.get(i);
    if (id == null) {
      id = registerView(backend, base + 4 * i * size, size);
      ids.set(i, id);
    }
    return id;
  };
  try {
    for (let o = 0; o < aIdx.length; o++) {
      const aId = view(aIds, aBase, aIdx[o], M * K);
      // A b slice shared by several entries keeps its XNNPACK operator (packed weights) meanwhile.
      const bId = view(bIds, bBase, bIdx[o], K * N);
      const oId = registerView(backend, oBase + 4 * o * M * N, M * N);
      try {
        raw(aId, aShape, 3, bId, bShape, 3, false, false, oId);
      } finally {
        releaseView(backend, oId);
      }
    }
  } finally {
    for (const id of aIds.values()) releaseView(backend, id);
    for (const id of bIds.values()) releaseView(backend, id);
  }
  return out;
}

/** Either operand (or both) transposed when asked (kept or temporary: the caller disposes `temps`). */
function plainOperands(
  backend: WasmBackend,
  a: TensorInfo,
  b: TensorInfo,
  transposeA: boolean,
  transposeB: boolean,
  temps: TensorInfo[],
): [TensorInfo, TensorInfo] {
  const plain = (x: TensorInfo, transpose: boolean): TensorInfo => {
    if (!transpose) return x;
    const { t, owned } = transposeCache(backend).get(x);
    if (owned) temps.push(t);
    return t;
  };
  return [plain(a, transposeA), plain(b, transposeB)];
}

const PLAIN = { transposeA: false, transposeB: false };

/**
 * K = 1: every output entry is one product, a(i)·b(j), so the product is a broadcast Multiply of a
 * as [..., M, 1] by b as [..., 1, N] (either operand's transpose has the same memory layout as
 * that). XNNPACK's vectorised multiply instead of the stock matmul loop: the attention's
 * gradient wrt the annotations, αᵀ · dc per decoder step ([64, 1, S]ᵀ · [64, 1, 512]), took
 * 5-6 ms a call in the loop and ≈ 0.3 ms this way.
 */
function outerProduct(backend: unknown, a: TensorInfo, b: TensorInfo, d: MatMulDims): TensorInfo {
  const multiply = getKernel('Multiply', 'wasm');
  if (multiply == null) throw new Error('frost BatchMatMul: no wasm Multiply kernel');
  const A = withShape(a, [...a.shape.slice(0, -2), d.M, 1]);
  const B = withShape(b, [...b.shape.slice(0, -2), 1, d.N]);
  const out = multiply.kernelFunc({ inputs: { a: A, b: B }, backend: backend as never, attrs: {} }) as TensorInfo;
  return { dataId: out.dataId, shape: d.outShape, dtype: out.dtype };
}

/**
 * The product through the native runner (native-gemm.ts) when it is big enough and one 2-D GEMM can do
 * it: no batch, or a's batch folded into its rows (b shared, a not transposed). Null otherwise.
 */
function nativeMatMul(
  native: NativeGemm,
  backend: WasmBackend,
  a: TensorInfo,
  b: TensorInfo,
  tA: boolean,
  tB: boolean,
  d: MatMulDims,
): TensorInfo | null {
  if (d.batchB !== 1 || (d.batchA !== 1 && tA)) return null;
  const M = d.batchA * d.M;
  if (M * d.K * d.N < native.minMacs) return null;
  // A per-shape dispatcher (gemm-dispatch.ts) leaves the classes XNNPACK was fastest on to XNNPACK.
  if (native.accepts?.(M, d.K, d.N, tA, tB, false) === false) return null;
  const out = backend.makeOutput(d.outShape, 'float32');
  try {
    // Views after makeOutput (it may grow the heap).
    native.gemm(f32View(backend, a), f32View(backend, b), f32View(backend, out), M, d.K, d.N, tA, tB);
    return out;
  } catch (e) {
    backend.disposeData(out.dataId);
    setNativeGemm(null);
    console.warn(
      `frost: native GEMM failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); using XNNPACK from now on`,
    );
    return null;
  }
}

/**
 * A batched product (b batched, or a transposed with a batch) through the native runner, one GEMM per output
 * batch entry on subarrays of the heap (no copies, batch axes of size 1 broadcast). Null when the entries are
 * too small for it to pay.
 */
function nativeBatchedMatMul(
  native: NativeGemm,
  backend: WasmBackend,
  a: TensorInfo,
  b: TensorInfo,
  tA: boolean,
  tB: boolean,
  d: MatMulDims,
): TensorInfo | null {
  const { M, K, N, batchShape, outShape } = d;
  const entries = util.sizeFromShape(batchShape);
  // Both operands batched alike (no broadcast): one call for every entry where the runner has one.
  const oneCall =
    native.batched != null &&
    d.batchA === entries &&
    d.batchB === entries &&
    entries * M * K * N >= native.batched.minMacs;
  if (!oneCall) {
    if (M * K * N < native.minEntryMacs) return null;
    if (native.accepts?.(M, K, N, tA, tB, true) === false) return null;
  }
  const out = backend.makeOutput(outShape, 'float32');
  try {
    // Views after makeOutput (it may grow the heap).
    const A = f32View(backend, a);
    const B = f32View(backend, b);
    const Y = f32View(backend, out);
    if (oneCall) {
      native.batched!.gemm(A, B, Y, entries, M, K, N, tA, tB);
      return out;
    }
    const aIdx = broadcastIndices(a.shape.slice(0, -2), batchShape);
    const bIdx = broadcastIndices(b.shape.slice(0, -2), batchShape);
    const [sa, sb, sy] = [M * K, K * N, M * N];
    for (let o = 0; o < aIdx.length; o++) {
      native.gemm(
        A.subarray(aIdx[o] * sa, (aIdx[o] + 1) * sa),
        B.subarray(bIdx[o] * sb, (bIdx[o] + 1) * sb),
        Y.subarray(o * sy, (o + 1) * sy),
        M,
        K,
        N,
        tA,
        tB,
      );
    }
    return out;
  } catch (e) {
    backend.disposeData(out.dataId);
    setNativeGemm(null);
    console.warn(
      `frost: native GEMM failed (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); using XNNPACK from now on`,
    );
    return null;
  }
}

export function makeBatchMatMul(stock: KernelFunc): KernelFunc {
  return (args) => {
    const a = args.inputs.a as TensorInfo;
    const b = args.inputs.b as TensorInfo;
    const { transposeA = false, transposeB = false } = args.attrs as { transposeA?: boolean; transposeB?: boolean };
    if (a.dtype !== 'float32' || b.dtype !== 'float32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const d = matMulDims(a, b, transposeA, transposeB);
    // Before the stock path: with K = 0 it returns uninitialised memory.
    if (util.sizeFromShape(d.outShape) === 0 || d.K === 0) return zeros(backend, d.outShape);
    const native = nativeGemm();
    if (native != null) {
      const out =
        nativeMatMul(native, backend, a, b, transposeA, transposeB, d) ??
        // (K = 1 stays a broadcast Multiply below: one vectorised pass beats a call per entry.)
        (d.K > 1 && (d.batchB !== 1 || (d.batchA !== 1 && transposeA))
          ? nativeBatchedMatMul(native, backend, a, b, transposeA, transposeB, d)
          : null);
      if (out != null) return out;
    }
    if (d.K === 1 && d.M * d.N > 1) return outerProduct(args.backend, a, b, d);
    if (!transposeA && !transposeB && d.batchA === 1 && d.batchB === 1) return stock(args);

    const noBroadcast = d.batchA === d.batchB && util.sizeFromShape(d.batchShape) === d.batchA;
    // Tiny batched products: the stock loop, which handles the transposes itself at this size.
    // (A JS loop over the heap was tried: faster only for αᵀ·dc outer products, slower for the rest.)
    if (d.batchB > 1 && noBroadcast && d.M * d.K * d.N < SLICE_MIN_MACS) return stock(args);

    const temps: TensorInfo[] = [];
    try {
      const [A, B] = plainOperands(backend, a, b, transposeA, transposeB, temps);
      if (d.batchB === 1) {
        const out = stock({
          inputs: { a: withShape(A, [1, d.batchA * d.M, d.K]), b: withShape(B, [1, d.K, d.N]) },
          backend: args.backend,
          attrs: PLAIN,
        }) as TensorInfo;
        return { dataId: out.dataId, shape: d.outShape, dtype: out.dtype };
      }
      return slicedMatMul(backend, A, B, d);
    } finally {
      for (const t of temps) backend.disposeData(t.dataId);
    }
  };
}

/** Kernels (and their attrs) that apply each fusable activation, for the unfused fallback. */
function activationKernel(activation: string, attrs: NamedAttrMap): { name: string; attrs: NamedAttrMap } | null {
  switch (activation) {
    case 'linear':
      return null;
    case 'relu':
      return { name: 'Relu', attrs: {} };
    case 'relu6':
      return { name: 'Relu6', attrs: {} };
    case 'elu':
      return { name: 'Elu', attrs: {} };
    case 'sigmoid':
      return { name: 'Sigmoid', attrs: {} };
    case 'leakyrelu':
      return { name: 'LeakyRelu', attrs: { alpha: (attrs.leakyreluAlpha as number | undefined) ?? 0.2 } };
    case 'prelu':
      return { name: 'Prelu', attrs: {} };
    default:
      throw new Error(`_FusedMatMul: unknown activation ${activation}`);
  }
}

function runKernel(
  name: string,
  inputs: Record<string, TensorInfo>,
  backend: unknown,
  attrs: NamedAttrMap = {},
): TensorInfo {
  const kernel = getKernel(name, 'wasm');
  if (kernel == null) throw new Error(`frost _FusedMatMul: no wasm kernel ${name}`);
  return kernel.kernelFunc({ inputs, backend: backend as never, attrs }) as TensorInfo;
}

/**
 * _FusedMatMul (tf.fused.matMul: matmul + bias + activation; tfjs-core reshapes a and b to rank 3
 * first). The stock kernel is right only on its XNNPACK path: its loop adds bias[min(i·N + j,
 * size − 1)], i.e. the last bias element for every row after the first, whenever a transpose or
 * a batch sends it there; and its XNNPACK path reads N bias values even from a 1-element bias.
 * So: stock when it takes XNNPACK with a size-N (or no) bias; batch folded into rows when b has
 * batch 1; otherwise BatchMatMul, then the Add and activation kernels, unfused.
 */
export function makeFusedMatMul(stock: KernelFunc, batchMatMul: KernelFunc): KernelFunc {
  return (args) => {
    const { a, b, bias, preluActivationWeights } = args.inputs as Record<string, TensorInfo | undefined>;
    if (a == null || b == null) return stock(args);
    const attrs = args.attrs as NamedAttrMap;
    const transposeA = Boolean(attrs.transposeA);
    const transposeB = Boolean(attrs.transposeB);
    if (a.dtype !== 'float32' || b.dtype !== 'float32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const d = matMulDims(a, b, transposeA, transposeB);
    const biasOk = bias == null || (bias.shape.length === 1 && bias.shape[0] === d.N);
    const xnnOk = biasOk && d.K > 0 && util.sizeFromShape(d.outShape) > 0;
    if (xnnOk && !transposeA && !transposeB && d.batchA === 1 && d.batchB === 1) return stock(args);

    if (xnnOk && d.batchB === 1) {
      const temps: TensorInfo[] = [];
      try {
        const [A, B] = plainOperands(backend, a, b, transposeA, transposeB, temps);
        const inputs: Record<string, TensorInfo> = {
          a: withShape(A, [1, d.batchA * d.M, d.K]),
          b: withShape(B, [1, d.K, d.N]),
        };
        if (bias != null) inputs.bias = bias;
        if (preluActivationWeights != null) inputs.preluActivationWeights = preluActivationWeights;
        const out = stock({
          inputs,
          backend: args.backend,
          attrs: { ...attrs, transposeA: false, transposeB: false },
        }) as TensorInfo;
        return { dataId: out.dataId, shape: d.outShape, dtype: out.dtype };
      } finally {
        for (const t of temps) backend.disposeData(t.dataId);
      }
    }

    let y = batchMatMul({ inputs: { a, b }, backend: args.backend, attrs: { transposeA, transposeB } }) as TensorInfo;
    if (bias != null) {
      const sum = runKernel('Add', { a: y, b: bias }, args.backend);
      backend.disposeData(y.dataId);
      y = sum;
    }
    const act = activationKernel(String(attrs.activation ?? 'linear'), attrs);
    if (act != null) {
      const inputs: Record<string, TensorInfo> =
        act.name === 'Prelu' ? { x: y, alpha: preluActivationWeights! } : { x: y };
      const z = runKernel(act.name, inputs, args.backend, act.attrs);
      backend.disposeData(y.dataId);
      y = z;
    }
    return y;
  };
}
