/**
 * Identity (engine.clone) for the wasm backend without a copy.
 *
 * While a gradient tape records, tfjs-core's engine keeps every op's saved inputs/outputs for the
 * backward pass through engine.clone → the Identity kernel (engine.ts, saveTensorsForBackwardMode).
 * The stock wasm Identity memcpy's the tensor, so each MatMul of a training step copied its weight
 * matrix (the [512, 6000] output layer: 12 MB) and its activations. tfjs tensors are immutable and
 * no wasm kernel writes into its inputs, so, like the cpu backend's Identity, this one returns the
 * same data with its reference count raised.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { asWasmBackend } from './wasm-internals.ts';

export function aliasingIdentity(stock: KernelFunc): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype === 'string') return stock(args);
    asWasmBackend(args.backend).incRef(x.dataId);
    return { dataId: x.dataId, shape: [...x.shape], dtype: x.dtype };
  };
}
