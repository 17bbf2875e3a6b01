/**
 * FINDINGS (placeholder, rewritten below after measurement)
 */
import '@tensorflow/tfjs-backend-wasm';
import { getKernel, registerKernel, unregisterKernel, type KernelConfig, type KernelFunc } from '@tensorflow/tfjs-core';
import { makeBatchMatMul, makeFusedMatMul } from './kernels/batch-matmul.ts';
import { aliasingIdentity } from './kernels/identity.ts';
import { heapSlice, heapSplitV, heapUnpack } from './kernels/slice.ts';
import { aliasingTranspose } from './kernels/transpose.ts';
import { unsortedSegmentSum } from './kernels/unsorted-segment-sum.ts';

const BACKEND = 'wasm';

interface Override {
  kernelName: string;
  /** Builds our kernel from the stock one (undefined when the backend has none). */
  make: (stock: KernelFunc | undefined) => KernelFunc;
}

function requireStock(name: string, stock: KernelFunc | undefined): KernelFunc {
  if (stock == null) throw new Error(`frost: the wasm backend has no stock '${name}' kernel to delegate to`);
  return stock;
}

const OVERRIDES: Override[] = [
  { kernelName: 'BatchMatMul', make: (stock) => makeBatchMatMul(requireStock('BatchMatMul', stock)) },
  { kernelName: '_FusedMatMul', make: (stock) => makeFusedMatMul(requireStock('_FusedMatMul', stock)) },
  { kernelName: 'Transpose', make: (stock) => aliasingTranspose(requireStock('Transpose', stock)) },
  { kernelName: 'UnsortedSegmentSum', make: () => unsortedSegmentSum },
  { kernelName: 'Identity', make: (stock) => aliasingIdentity(requireStock('Identity', stock)) },
  { kernelName: 'Slice', make: (stock) => heapSlice(requireStock('Slice', stock)) },
  { kernelName: 'SplitV', make: (stock) => heapSplitV(requireStock('SplitV', stock)) },
  { kernelName: 'Unpack', make: (stock) => heapUnpack(requireStock('Unpack', stock)) },
];

/** The configs registered before ours (undefined: none was), kept to delegate to and to restore. */
const stockConfigs = new Map<string, KernelConfig | undefined>();
const ourKernels = new WeakSet<KernelFunc>();

/** Registers frost's wasm kernels (idempotent). Works before or after the wasm backend is initialised. */
export function registerWasmKernels(): void {
  for (const { kernelName, make } of OVERRIDES) {
    const current = getKernel(kernelName, BACKEND);
    if (current != null && ourKernels.has(current.kernelFunc)) continue;
    if (!stockConfigs.has(kernelName)) stockConfigs.set(kernelName, current);
    const stock = stockConfigs.get(kernelName);
    const kernelFunc = make(stock?.kernelFunc);
    ourKernels.add(kernelFunc);
    if (current != null) unregisterKernel(kernelName, BACKEND);
    // The stock setupFunc (it cwraps the C++ entry point) must still run when a backend instance
    // is created after this registration; the engine only calls the registered config's.
    registerKernel({ kernelName, backendName: BACKEND, kernelFunc, setupFunc: stock?.setupFunc, disposeFunc: stock?.disposeFunc });
  }
}

/** Puts the stock kernels back (benchmarks and tests compare against them). */
export function unregisterWasmKernels(): void {
  for (const { kernelName } of OVERRIDES) {
    const current = getKernel(kernelName, BACKEND);
    if (current == null || !ourKernels.has(current.kernelFunc)) continue;
    unregisterKernel(kernelName, BACKEND);
    const stock = stockConfigs.get(kernelName);
    if (stock != null) registerKernel(stock);
  }
}

/** The stock kernel function that registerWasmKernels replaced (undefined if none existed). */
export function stockWasmKernel(kernelName: string): KernelFunc | undefined {
  if (stockConfigs.has(kernelName)) return stockConfigs.get(kernelName)?.kernelFunc;
  const current = getKernel(kernelName, BACKEND);
  return current != null && !ourKernels.has(current.kernelFunc) ? current.kernelFunc : undefined;
}

/** Names of the kernels frost overrides or adds on wasm. */
export const WASM_KERNEL_OVERRIDES: readonly string[] = OVERRIDES.map((o) => o.kernelName);
