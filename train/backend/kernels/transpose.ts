/**
 * Transposes used by the custom wasm kernels.
 *
 * transposeLastTwo: [..., R, C] → [..., C, R] into a fresh tensor, with a blocked loop on the heap
 * views (tiles of 64×64 floats, 16 KiB each, stay in L1/L2 while one side is read with a stride).
 * Measured here against the stock wasm Transpose kernel: equal on large matrices (both are memory
 * bound: 1280×6000 ≈ 35 ms), up to 2× faster on small ones (64×768: 0.15 vs 0.28 ms), and it needs
 * no perm/shape marshalling for batched inputs.
 *
 * TransposeCache keeps the transposed copy of an operand that is transposed a second time while
 * its data is alive: the weights of a recurrent layer are used once per time step, and the
 * gradient of x·W transposes W at every step (dG·Wᵀ). A kept copy also keeps its C++ tensor id,
 * on which the stock kernel caches XNNPACK's packed weights, so later steps skip packing too.
 * Copies are dropped as soon as their source is disposed (checked on every use), oldest first
 * beyond CACHE_MAX_BYTES.
 *
 * aliasingTranspose wraps the stock Transpose kernel: a permutation that moves only size-1 axes (or
 * none) changes no element's position, so it returns the input's data under the new shape (as
 * Reshape does) instead of copying. The gradient of Gather transposes with such permutations twice
 * (an identity perm for axis 0), which copied the whole [vocab, dim] embedding gradient each time.
 */
import type { DataId, KernelFunc, NamedAttrMap, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { numericView, tensorData, type WasmBackend } from './wasm-internals.ts';

const TILE = 64;

/** dst[b][j][i] = src[b][i][j] for b < batch, i < R, j < C. */
function transposeInto(
  src: Float32Array | Int32Array | Uint8Array,
  dst: Float32Array | Int32Array | Uint8Array,
  batch: number,
  R: number,
  C: number,
): void {
  const plane = R * C;
  for (let b = 0; b < batch; b++) {
    const base = b * plane;
    if (R === 1 || C === 1) {
      dst.set(src.subarray(base, base + plane), base);
      continue;
    }
    for (let j0 = 0; j0 < C; j0 += TILE) {
      const j1 = Math.min(j0 + TILE, C);
      for (let i0 = 0; i0 < R; i0 += TILE) {
        const i1 = Math.min(i0 + TILE, R);
        for (let j = j0; j < j1; j++) {
          const d = base + j * R;
          let s = base + i0 * C + j;
          for (let i = i0; i < i1; i++, s += C) dst[d + i] = src[s];
        }
      }
    }
  }
}

/** A new tensor holding x with its last two axes swapped. The caller owns (disposes) it. */
function transposeLastTwo(backend: WasmBackend, x: TensorInfo): TensorInfo {
  const rank = x.shape.length;
  if (rank < 2) throw new Error(`transposeLastTwo: rank ${rank} < 2`);
  const R = x.shape[rank - 2];
  const C = x.shape[rank - 1];
  const outShape = [...x.shape.slice(0, -2), C, R];
  const out = backend.makeOutput(outShape, x.dtype);
  // Views after the allocation: makeOutput may grow (and so detach) the heap.
  const src = numericView(backend, x);
  const dst = numericView(backend, out);
  transposeInto(src, dst, util.sizeFromShape(x.shape.slice(0, -2)), R, C);
  return out;
}

/** True when perm only reorders axes of size 1 among themselves or around the others. */
function permIsLayoutNoOp(shape: number[], perm: number[]): boolean {
  let last = -1;
  for (const axis of perm) {
    if (shape[axis] === 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

export function aliasingTranspose(stock: KernelFunc): KernelFunc {
  return (args) => {
    const { inputs, backend, attrs } = args;
    const x = inputs.x as TensorInfo;
    const perm = (attrs as NamedAttrMap).perm as number[];
    if (x.dtype !== 'string' && permIsLayoutNoOp(x.shape, perm)) {
      (backend as unknown as WasmBackend).incRef(x.dataId);
      return { dataId: x.dataId, shape: perm.map((p) => x.shape[p]), dtype: x.dtype };
    }
    return stock(args);
  };
}

/** Upper bound on the kept transposed copies (per backend). */
const CACHE_MAX_BYTES = 64 * 2 ** 20;

interface Kept {
  source: DataId;
  /** C++ id and shape of the source when the copy was made. */
  signature: string;
  copy: TensorInfo;
  bytes: number;
}

class TransposeCache {
  private readonly seen = new WeakMap<DataId, string>();
  private readonly kept = new Map<DataId, Kept>(); // insertion order = least recently used first
  private bytes = 0;

  constructor(private readonly backend: WasmBackend) {}

  /** x with its last two axes swapped; `owned`: the caller must dispose it (not kept). */
  get(x: TensorInfo): { t: TensorInfo; owned: boolean } {
    this.sweep();
    const signature = `${tensorData(this.backend, x).id}:${x.shape.join(',')}`;
    const hit = this.kept.get(x.dataId);
    if (hit != null && hit.signature === signature) {
      this.kept.delete(x.dataId);
      this.kept.set(x.dataId, hit);
      return { t: hit.copy, owned: false };
    }
    const t = transposeLastTwo(this.backend, x);
    const bytes = 4 * util.sizeFromShape(x.shape);
    if (this.seen.get(x.dataId) !== signature || bytes > CACHE_MAX_BYTES / 4) {
      this.seen.set(x.dataId, signature);
      return { t, owned: true };
    }
    if (hit != null) this.drop(hit);
    this.kept.set(x.dataId, { source: x.dataId, signature, copy: t, bytes });
    this.bytes += bytes;
    for (const oldest of this.kept.values()) {
      if (this.bytes <= CACHE_MAX_BYTES || oldest.copy === t) break;
      this.drop(oldest);
    }
    return { t, owned: false };
  }

  /** Disposes the copies whose source data is gone (or was replaced under the same DataId). */
  sweep(): void {
    for (const k of this.kept.values()) {
      const live =
        this.backend.dataIdMap.has(k.source) && k.signature.startsWith(`${this.backend.dataIdMap.get(k.source)!.id}:`);
      if (!live) this.drop(k);
    }
  }

  clear(): void {
    for (const k of this.kept.values()) this.drop(k);
  }

  get size(): number {
    return this.kept.size;
  }

  private drop(k: Kept): void {
    this.kept.delete(k.source);
    this.bytes -= k.bytes;
    this.backend.disposeData(k.copy.dataId);
  }
}

const caches = new WeakMap<WasmBackend, TransposeCache>();

export function transposeCache(backend: WasmBackend): TransposeCache {
  let cache = caches.get(backend);
  if (cache == null) {
    cache = new TransposeCache(backend);
    caches.set(backend, cache);
  }
  return cache;
}
