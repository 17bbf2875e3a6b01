/**
 * Typed access to the parts of @tensorflow/tfjs-backend-wasm's BackendWasm (4.22) that the custom
 * kernels use. The package's own .d.ts marks some of these private or types the module loosely, so
 * the kernels go through this one narrow interface instead of casting to `any` everywhere.
 *
 * Memory model (dist/backend_wasm.js): every tensor is a block malloc'ed on the wasm heap; dataIdMap
 * maps a tfjs DataId to { id, memoryOffset, shape, dtype, refCount }, and the C++ side keeps its own
 * registry id → (offset, size) filled by wasm.tfjs.registerTensor. C++ kernels take those integer ids.
 */
import type { DataId, DataType, TensorInfo, backend_util } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';

export interface WasmTensorData {
  id: number;
  memoryOffset: number;
  shape: number[];
  dtype: DataType;
  refCount: number;
}

type CwrapArg = 'number' | 'array';
export type CwrappedFn = (...args: Array<number | boolean | Uint8Array>) => unknown;

export interface WasmModule {
  HEAPU8: Uint8Array;
  /** Present on the threaded build (shared, growable memory); absent on the single-threaded ones. */
  wasmMemory?: WebAssembly.Memory;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
  cwrap(name: string, returnType: 'number' | null, argTypes: CwrapArg[]): CwrappedFn;
  tfjs: {
    registerTensor(id: number, size: number, memoryOffset: number): void;
    disposeData(id: number): void;
    getThreadsCount(): number;
  };
}

export interface WasmBackend {
  wasm: WasmModule;
  dataIdMap: { get(dataId: DataId): WasmTensorData | undefined; has(dataId: DataId): boolean };
  makeOutput(shape: number[], dtype: DataType, memoryOffset?: number, values?: backend_util.BackendValues): TensorInfo;
  disposeData(dataId: DataId, force?: boolean): boolean;
  incRef(dataId: DataId): void;
  /** How many tensors share this data (1: only the one it was made for). */
  refCount(dataId: DataId): number;
  readSync(dataId: DataId): backend_util.BackendValues;
}

export function asWasmBackend(backend: unknown): WasmBackend {
  const b = backend as Partial<WasmBackend> | null;
  if (b == null || b.wasm == null || b.dataIdMap == null || typeof b.makeOutput !== 'function') {
    throw new Error('frost wasm kernels: expected a BackendWasm instance');
  }
  return b as WasmBackend;
}

/**
 * A fused kernel's inputs checked at its boundary: each name in `required` present, and every input
 * given float32, except those named in `int32`, which must be int32.
 */
export function checkKernelInputs(
  kernel: string,
  inputs: Record<string, TensorInfo | undefined>,
  required: readonly string[],
  int32: readonly string[] = [],
): void {
  for (const name of required) if (inputs[name] == null) throw new TypeError(`${kernel}: missing input '${name}'`);
  for (const [name, t] of Object.entries(inputs)) {
    const dtype = int32.includes(name) ? 'int32' : 'float32';
    if (t != null && t.dtype !== dtype)
      throw new TypeError(`${kernel}: input '${name}' must be ${dtype}, got ${t.dtype}`);
  }
}

export function tensorData(backend: WasmBackend, t: TensorInfo): WasmTensorData {
  const d = backend.dataIdMap.get(t.dataId);
  if (d == null) throw new Error('frost wasm kernels: tensor data not found on the wasm backend');
  return d;
}

/**
 * The heap's current ArrayBuffer. Views must be made after the last allocation of a kernel: a
 * malloc that grows memory detaches the old buffer (single-threaded build) or leaves HEAPU8 stale
 * until emscripten refreshes it (threaded build, where wasmMemory.buffer is always current).
 */
function heapBuffer(backend: WasmBackend): ArrayBufferLike {
  return backend.wasm.wasmMemory?.buffer ?? backend.wasm.HEAPU8.buffer;
}

export function f32View(backend: WasmBackend, t: TensorInfo): Float32Array {
  return new Float32Array(heapBuffer(backend), tensorData(backend, t).memoryOffset, util.sizeFromShape(t.shape));
}

/** A typed view of a numeric tensor in its own dtype (bool as Uint8Array). */
export function numericView(backend: WasmBackend, t: TensorInfo): Float32Array | Int32Array | Uint8Array {
  const { memoryOffset } = tensorData(backend, t);
  const n = util.sizeFromShape(t.shape);
  switch (t.dtype) {
    case 'float32':
      return new Float32Array(heapBuffer(backend), memoryOffset, n);
    case 'int32':
      return new Int32Array(heapBuffer(backend), memoryOffset, n);
    case 'bool':
      return new Uint8Array(heapBuffer(backend), memoryOffset, n);
    default:
      throw new Error(`frost wasm kernels: unsupported dtype ${t.dtype}`);
  }
}

/**
 * A fresh C++ tensor id. BackendWasm hands out ids from its (private) dataIdNextNumber counter;
 * taking ours from the same counter keeps them unique among the backend's own.
 */
function nextTensorId(backend: WasmBackend): number {
  const b = backend as unknown as { dataIdNextNumber: number };
  return b.dataIdNextNumber++;
}

/**
 * Registers `size` floats at `memoryOffset` (inside some existing tensor's block) under a new C++
 * id, so a C++ kernel can read or write that slice without a copy. Only the C++ registry knows the
 * id: release it with releaseView, never with backend.disposeData (that would free() the middle of
 * a block). Releasing also runs the C++ disposal callbacks, e.g. drops XNNPACK operators cached on it.
 */
export function registerView(backend: WasmBackend, memoryOffset: number, size: number): number {
  const id = nextTensorId(backend);
  backend.wasm.tfjs.registerTensor(id, size, memoryOffset);
  return id;
}

export function releaseView(backend: WasmBackend, id: number): void {
  backend.wasm.tfjs.disposeData(id);
}

/** A TensorInfo that shares t's data under another shape of the same size (no refcount change). */
export function withShape(t: TensorInfo, shape: number[]): TensorInfo {
  return { dataId: t.dataId, shape, dtype: t.dtype };
}

export function shapeBytes(shape: number[]): Uint8Array {
  return new Uint8Array(new Int32Array(shape).buffer);
}

/**
 * `input` itself as a kernel's output, when the kernel's inPlace attr allows it (the caller will not read the input
 * again) and no other tensor shares its data; null otherwise, and the kernel makes a new output.
 */
export function ownedInput(backend: WasmBackend, input: TensorInfo, attrs: unknown): TensorInfo | null {
  if ((attrs as { inPlace?: unknown } | undefined)?.inPlace !== true) return null;
  if (backend.refCount(input.dataId) !== 1) return null;
  backend.incRef(input.dataId);
  return { dataId: input.dataId, shape: [...input.shape], dtype: input.dtype };
}
