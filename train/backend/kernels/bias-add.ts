/**
 * FrostBiasAdd (the contract is in models/layers/bias-add.ts) for the wasm backend: one SIMD pass adding the bias
 * to each row, written over x when the caller gave x up (ownedInput), so an output layer's scores need no second
 * [N, |V|] buffer.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { BIAS_ADD_KERNEL } from '../../../models/layers/bias-add.ts';
import { i32, ModuleBuilder } from './wasm-builder.ts';
import { asWasmBackend, checkKernelInputs, ownedInput } from './wasm-internals.ts';
import { at, forEachRow, heapFunctions, heapOffset, lanesLoop } from './wasm-lanes.ts';

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  const f = m.func('bias_add', ['x', 'bias', 'out', 'rows', 'cols']);
  const [x, bias, out, rows, cols] = f.params;
  const n = f.local('i32');
  const rowBytes = f.local('i32');
  const xRow = f.local('i32');
  const oRow = f.local('i32');
  f.emit(
    rowBytes.set(i32.shl(cols.get(), i32.const(2))),
    forEachRow(
      n,
      rows,
      rowBytes,
      [
        [xRow, x],
        [oRow, out],
      ],
      // Each element is read before it is written: in place is safe.
      lanesLoop(f, rowBytes, (L, j) => L.store(at(oRow, j), L.add(L.load(at(xRow, j)), L.load(at(bias, j))))),
    ),
  );
  return m;
}

export const biasAddKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(BIAS_ADD_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['x', 'bias']);
  const { x, bias } = inputs as Record<string, TensorInfo>;
  if (x.shape.length !== 2 || bias.shape.length !== 1 || bias.shape[0] !== x.shape[1])
    throw new Error(`${BIAS_ADD_KERNEL}: x [N, C] and bias [C], got [${x.shape}] and [${bias.shape}]`);
  const [N, C] = x.shape;
  const out = ownedInput(backend, x, attrs) ?? backend.makeOutput([N, C], 'float32');
  heapFunctions(backend, buildModule).bias_add(
    heapOffset(backend, x),
    heapOffset(backend, bias),
    heapOffset(backend, out),
    N,
    C,
  );
  return [out];
};
