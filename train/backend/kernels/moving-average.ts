/**
 * FrostMovingAverage (the contract is in train/optim/parameter-average.ts) for the wasm backend:
 * a' = d·a + (1 − d)·p in one wasm SIMD pass, in the float32 rounding of the tfjs ops it replaces
 * (two Muls and an Add: three passes and two temporaries per parameter tensor, 6.3M floats each
 * update for the `small` subword model).
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { MOVING_AVERAGE_KERNEL, type MovingAverageAttrs } from '../../optim/parameter-average.ts';
import { f32, i32, ModuleBuilder } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesLoop } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs } from './wasm-internals.ts';

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  // Float attributes travel as their float32 bit patterns (the builder's functions take i32s).
  const f = m.func('moving_average', ['a', 'p', 'out', 'n', 'decay', 'rest']);
  const [a, p, out, n, decay, rest] = f.params;
  const bytes = f.local('i32');
  f.emit(
    bytes.set(i32.shl(n.get(), i32.const(2))),
    lanesLoop(f, bytes, (L, j) =>
      L.store(
        at(out, j),
        L.add(
          L.mul(L.load(at(a, j)), L.splat(f32.reinterpretI32(decay.get()))),
          L.mul(L.load(at(p, j)), L.splat(f32.reinterpretI32(rest.get()))),
        ),
      ),
    ),
  );
  return m;
}

const bits = (x: number) => new Int32Array(Float32Array.of(x).buffer)[0];

export const movingAverageKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(MOVING_AVERAGE_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['average', 'param']);
  const { average, param } = inputs as Record<string, TensorInfo>;
  if (average.shape.join() !== param.shape.join())
    throw new Error(`${MOVING_AVERAGE_KERNEL}: shapes [${average.shape}] and [${param.shape}] differ`);
  const { decay } = attrs as unknown as MovingAverageAttrs;
  const out = backend.makeOutput(average.shape, 'float32');
  heapFunctions(backend, buildModule).moving_average(
    heapOffset(backend, average),
    heapOffset(backend, param),
    heapOffset(backend, out),
    util.sizeFromShape(average.shape),
    // 1 − d as the ops compute it: a float64 difference, then a float32 scalar.
    bits(decay),
    bits(1 - decay),
  );
  return [out];
};
