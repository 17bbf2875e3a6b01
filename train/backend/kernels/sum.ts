/**
 * Sum over leading axes (column sums) for the wasm backend.
 *
 * The stock wasm Sum reduces only innermost axes: for any other axis it first transposes the whole
 * input into a new buffer (kernel_utils permuteAxesAndTranspose), then sums. Every bias gradient is
 * a sum over the rows (axis 0) of the upstream gradient: [N, |V|] for the output layer's bias,
 * [B, 3H] at each GRU step, so each paid a full transpose (4 ms for a [512, 1536] here). When the
 * reduced axes are a leading prefix, this adds the rows up in one pass (rows read contiguously), in
 * wasm SIMD (column-sum.ts; a JS loop with a float64 accumulator before, 1.3-1.6× faster than the
 * stock kernel from [512, 1536] up, and ≈ 5× slower than the SIMD pass). Other axis sets, and
 * non-float32 inputs, go to the stock kernel.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { backend_util, util } from '@tensorflow/tfjs-core';
import { heapColumnSums } from './column-sum.ts';
import { asWasmBackend } from './wasm-internals.ts';

/**
 * Below this many elements the stock kernel's transpose is cheap enough. With the SIMD pass the
 * break-even is small: [64, 18, 512] 0.13 vs 2.1 ms, [512, 1536] 0.2 vs 3.0 ms, [1856, 5921] 4.2 vs 49 ms.
 */
export const LEADING_SUM_MIN = 2 ** 12;

export function leadingAxesSum(stock: KernelFunc): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype !== 'float32') return stock(args);
    const { axis, keepDims } = args.attrs as { axis: number | number[]; keepDims: boolean };
    const rank = x.shape.length;
    const axes = [...new Set(util.parseAxisParam(axis, x.shape))].sort((a, b) => a - b);
    const r = axes.length;
    // A prefix 0..r-1 that leaves something (reducing trailing or all axes is contiguous already).
    if (r === 0 || r === rank || axes[r - 1] !== r - 1) return stock(args);
    // Small inputs: the stock transpose + sum is as fast (its fixed cost is lower).
    if (util.sizeFromShape(x.shape) < LEADING_SUM_MIN) return stock(args);
    const backend = asWasmBackend(args.backend);
    const outer = util.sizeFromShape(x.shape.slice(0, r));
    const innerShape = x.shape.slice(r);
    const shape = keepDims ? backend_util.expandShapeToKeepDim(innerShape, axes) : innerShape;
    const out = backend.makeOutput(shape, 'float32');
    heapColumnSums(backend, x, out, outer, util.sizeFromShape(innerShape));
    return out;
  };
}
