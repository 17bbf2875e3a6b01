/**
 * Slice, SplitV and Unpack for the wasm backend, copying only the slice.
 *
 * The stock Slice (tfjs-backend-wasm 4.22, kernels/Slice.js) starts with backend.readSync(x), which
 * copies the WHOLE input out of the heap (HEAPU8.slice) before taking the part it needs; SplitV and
 * Unpack call it once per output. tf.unstack of the encoder's [S, B, 3H] input projections therefore
 * copies S whole tensors, and the gradient of tf.concat (a SplitV) likewise. Here the copy reads
 * the heap view directly: contiguous runs with TypedArray.set, short runs element by element.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { backend_util, slice_util, util } from '@tensorflow/tfjs-core';
import { asWasmBackend, numericView, type WasmBackend } from './wasm-internals.ts';

/** Below this run length a plain loop beats subarray()+set(). */
const SHORT_RUN = 16;

function sliceTensor(
  backend: WasmBackend,
  x: TensorInfo,
  begin: number | number[],
  size?: number | number[],
): TensorInfo {
  const [b, s] = slice_util.parseSliceParams(x, begin, size);
  const out = backend.makeOutput(s, x.dtype);
  const total = util.sizeFromShape(s);
  if (total === 0) return out;
  // Views after makeOutput (it may grow the heap).
  const src = numericView(backend, x);
  const dst = numericView(backend, out);
  const rank = x.shape.length;
  if (rank === 0) {
    dst[0] = src[0];
    return out;
  }
  const strides = util.computeStrides(x.shape);
  // The innermost axes taken whole after axis `d` make one contiguous run per index of the others.
  let d = rank - 1;
  while (d > 0 && s[d] === x.shape[d]) d--;
  const run = util.sizeFromShape(s.slice(d));
  const stride = (i: number) => (i < rank - 1 ? strides[i] : 1);
  let base = 0;
  for (let i = 0; i < rank; i++) base += b[i] * stride(i);
  const outer = total / run;
  const idx = new Array<number>(d).fill(0);
  let srcOff = base;
  for (let o = 0, dstOff = 0; o < outer; o++, dstOff += run) {
    if (run >= SHORT_RUN) dst.set(src.subarray(srcOff, srcOff + run), dstOff);
    else for (let j = 0; j < run; j++) dst[dstOff + j] = src[srcOff + j];
    // Odometer over axes d-1 … 0.
    for (let i = d - 1; i >= 0; i--) {
      idx[i]++;
      srcOff += stride(i);
      if (idx[i] < s[i]) break;
      srcOff -= idx[i] * stride(i);
      idx[i] = 0;
    }
  }
  return out;
}

export function heapSlice(stock: KernelFunc): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype === 'string') return stock(args);
    const { begin, size } = args.attrs as { begin: number | number[]; size?: number | number[] };
    return sliceTensor(asWasmBackend(args.backend), x, begin, size);
  };
}

export function heapSplitV(stock: KernelFunc): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype === 'string') return stock(args);
    const backend = asWasmBackend(args.backend);
    const { numOrSizeSplits, axis } = args.attrs as { numOrSizeSplits: number | number[]; axis: number };
    const $axis = util.parseAxisParam(axis, x.shape)[0];
    const sizes = backend_util.prepareSplitSize(x, numOrSizeSplits, $axis);
    const begin = new Array<number>(x.shape.length).fill(0);
    return sizes.map((n) => {
      const size = [...x.shape];
      size[$axis] = n;
      const piece = sliceTensor(backend, x, [...begin], size);
      begin[$axis] += n;
      return piece;
    });
  };
}

export function heapUnpack(stock: KernelFunc): KernelFunc {
  return (args) => {
    const value = args.inputs.value as TensorInfo;
    if (value.dtype === 'string') return stock(args);
    const backend = asWasmBackend(args.backend);
    let axis = (args.attrs as { axis: number }).axis;
    const rank = value.shape.length;
    if (axis < 0) axis += rank;
    const outShape = value.shape.filter((_, i) => i !== axis);
    const size = [...value.shape];
    size[axis] = 1;
    const begin = new Array<number>(rank).fill(0);
    const outs: TensorInfo[] = [];
    for (let i = 0; i < value.shape[axis]; i++) {
      begin[axis] = i;
      const piece = sliceTensor(backend, value, [...begin], size);
      outs.push({ dataId: piece.dataId, shape: outShape, dtype: piece.dtype });
    }
    return outs;
  };
}
