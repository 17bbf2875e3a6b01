/**
 * OneHot for the wasm backend that honours its dtype.
 *
 * The stock kernel (tfjs-backend-wasm 4.22) allocates the output in the requested dtype but its C++
 * loop always writes int32 values, so tf.oneHot(ids, depth, 1, 0, 'float32') came out as the bit
 * pattern of int 1 (1.4e-45), not 1.0. The loss's gradient wants a float32 one-hot (an int32 one
 * would be cast, another pass over [N, |V|]). Here: a native fill with offValue, then one write
 * per index; indices outside [0, depth) leave their row at offValue, as TensorFlow does.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { asWasmBackend, numericView } from './wasm-internals.ts';

function oneHotInto(
  ids: ArrayLike<number>,
  out: Float32Array | Int32Array | Uint8Array,
  depth: number,
  on: number,
  off: number,
): void {
  out.fill(off);
  for (let i = 0; i < ids.length; i++) {
    const j = ids[i];
    if (j >= 0 && j < depth) out[i * depth + j] = on;
  }
}

export function typedOneHot(stock: KernelFunc): KernelFunc {
  return (args) => {
    const indices = args.inputs.indices as TensorInfo;
    const { dtype, depth, onValue, offValue } = args.attrs as {
      dtype: 'float32' | 'int32' | 'bool';
      depth: number;
      onValue: number;
      offValue: number;
    };
    if (dtype !== 'float32' && dtype !== 'int32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const out = backend.makeOutput([...indices.shape, depth], dtype);
    // Views after makeOutput (it may grow the heap).
    oneHotInto(numericView(backend, indices), numericView(backend, out), depth, onValue, offValue);
    return out;
  };
}
