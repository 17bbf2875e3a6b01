/**
 * Conv2DBackpropInput (the gradient of conv2d wrt its input) for the wasm backend as one GEMM and a
 * col2im pass: dcols [N, kh·kw·C] = dy [N, out] · Wᵀ, then each column entry is added back to the
 * input position it was read from.
 *
 * The stock kernel (tfjs-backend-wasm 4.22, Conv2DBackpropInput.cc) is a direct scalar loop: on the
 * captioning CNN's stages it ran at ≈ 2 GFLOP/s, 5-10× slower than the forward Conv2D (XNNPACK)
 * on the same shapes (e.g. 261 ms vs 27 ms for 7×32×32×64 → 64, 3×3), and it was most of a
 * training step. The GEMM here goes through the registered BatchMatMul kernel (native GEMM for
 * large products, else XNNPACK). NCHW inputs are left to the stock kernel.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { backend_util, getKernel } from '@tensorflow/tfjs-core';
import { col2im, colsShape } from './im2col.ts';
import { asWasmBackend, f32View, withShape } from './wasm-internals.ts';

interface Attrs {
  strides: [number, number] | number;
  pad: 'valid' | 'same' | number | backend_util.ExplicitPadding;
  dataFormat: 'NHWC' | 'NCHW';
  dimRoundingMode?: 'floor' | 'round' | 'ceil';
  inputShape: [number, number, number, number];
}

export function gemmConv2dBackpropInput(stock: KernelFunc): KernelFunc {
  return (args) => {
    const dy = args.inputs.dy as TensorInfo;
    const filter = args.inputs.filter as TensorInfo;
    const { strides, pad, dataFormat, dimRoundingMode, inputShape } = args.attrs as unknown as Attrs;
    if (dataFormat !== 'NHWC' || dy.dtype !== 'float32' || filter.dtype !== 'float32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const info = backend_util.computeConv2DInfo(
      inputShape,
      filter.shape as [number, number, number, number],
      strides,
      1,
      pad,
      dimRoundingMode,
      false,
      'channelsLast',
    );
    const [N, K] = colsShape(info);
    const matMul = getKernel('BatchMatMul', 'wasm');
    if (matMul == null) throw new Error('Conv2DBackpropInput on wasm: no BatchMatMul kernel');
    const dcols = matMul.kernelFunc({
      inputs: { a: withShape(dy, [N, info.outChannels]), b: withShape(filter, [K, info.outChannels]) },
      backend: args.backend,
      attrs: { transposeA: false, transposeB: true },
    }) as TensorInfo;
    try {
      const dx = backend.makeOutput([...inputShape], 'float32');
      // Views after makeOutput, which may grow the heap.
      col2im(f32View(backend, dcols), f32View(backend, dx), info);
      return dx;
    } finally {
      backend.disposeData(dcols.dataId);
    }
  };
}
