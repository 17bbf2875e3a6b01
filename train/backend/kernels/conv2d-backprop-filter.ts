/**
 * Conv2DBackpropFilter for the wasm backend, which has none (tfjs-backend-wasm 4.22 registers
 * Conv2D and Conv2DBackpropInput but not this one, so tf.grad of tf.conv2d wrt its filter threw
 * "Kernel 'Conv2DBackpropFilter' not registered for backend 'wasm'").
 *
 * dW [kh·kw·C, out] = im2col(x)ᵀ · dy [N, out]: one GEMM through the registered BatchMatMul kernel
 * (frost's: native GEMM, the system BLAS or MLAS, for large products, else XNNPACK), after an im2col pass in JS. For
 * the
 * captioning CNN's stages the im2col pass costs about as much as the GEMM; a direct loop would be
 * the tfjs cpu kernel's 7-deep scalar loop at ≈ 1 GFLOP/s.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { backend_util, getKernel } from '@tensorflow/tfjs-core';
import { colsShape, im2col } from './im2col.ts';
import { asWasmBackend, f32View, withShape } from './wasm-internals.ts';

interface Attrs {
  strides: [number, number] | number;
  pad: 'valid' | 'same' | number | backend_util.ExplicitPadding;
  dataFormat: 'NHWC' | 'NCHW';
  dimRoundingMode?: 'floor' | 'round' | 'ceil';
  filterShape: [number, number, number, number];
}

export const conv2dBackpropFilter: KernelFunc = ({ inputs, backend: anyBackend, attrs }) => {
  const backend = asWasmBackend(anyBackend);
  const x = inputs.x as TensorInfo;
  const dy = inputs.dy as TensorInfo;
  const { strides, pad, dataFormat, dimRoundingMode, filterShape } = attrs as unknown as Attrs;
  if (dataFormat !== 'NHWC') throw new Error(`Conv2DBackpropFilter on wasm: only NHWC is supported, got ${dataFormat}`);
  if (x.dtype !== 'float32' || dy.dtype !== 'float32')
    throw new Error(`Conv2DBackpropFilter on wasm: float32 only, got ${x.dtype}/${dy.dtype}`);
  const info = backend_util.computeConv2DInfo(
    x.shape as [number, number, number, number],
    filterShape,
    strides,
    1,
    pad,
    dimRoundingMode,
    false,
    'channelsLast',
  );
  const [N, K] = colsShape(info);
  const cols = backend.makeOutput([N, K], 'float32');
  try {
    // Views after makeOutput, which may grow the heap.
    im2col(f32View(backend, x), f32View(backend, cols), info);
    const matMul = getKernel('BatchMatMul', 'wasm');
    if (matMul == null) throw new Error('Conv2DBackpropFilter on wasm: no BatchMatMul kernel');
    const dW = matMul.kernelFunc({
      inputs: { a: cols, b: withShape(dy, [N, info.outChannels]) },
      backend: anyBackend,
      attrs: { transposeA: true, transposeB: false },
    }) as TensorInfo;
    return { dataId: dW.dataId, shape: [...filterShape], dtype: 'float32' };
  } finally {
    backend.disposeData(cols.dataId);
  }
};
