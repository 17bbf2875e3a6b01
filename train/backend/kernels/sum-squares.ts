/**
 * FrostSumSquares (the contract is in train/optim/adam.ts) for the wasm backend: Σ x² in one wasm
 * SIMD pass, for the gradient's global norm. The ops (Square, then Sum) wrote and re-read a
 * temporary the size of each gradient: two passes and 48 kernel calls a step for the `small`
 * model. Accumulates in float32 lanes, as the stock Sum does.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { SUM_SQUARES_KERNEL } from '../../optim/adam.ts';
import { f32, i32, ModuleBuilder } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesSum } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs } from './wasm-internals.ts';

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  const f = m.func('sum_squares', ['x', 'out', 'n']);
  const [x, out, n] = f.params;
  const bytes = f.local('i32');
  f.emit(
    bytes.set(i32.shl(n.get(), i32.const(2))),
    f32.store(
      out.get(),
      lanesSum(f, bytes, (L, j) => {
        const v = L.load(at(x, j));
        return L.mul(v, v);
      }),
    ),
  );
  return m;
}

export const sumSquaresKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(SUM_SQUARES_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['x']);
  const x = inputs.x as TensorInfo;
  const out = backend.makeOutput([], 'float32');
  heapFunctions(backend, buildModule).sum_squares(
    heapOffset(backend, x),
    heapOffset(backend, out),
    util.sizeFromShape(x.shape),
  );
  return [out];
};
