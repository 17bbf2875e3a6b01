/* eslint-disable no-bitwise -- the mask threshold and seed are uint32 bit patterns. */
/**
 * FrostDropout (the contract is in models/layers/dropout.ts) for the wasm backend: the mask from
 * core/random's counter hash, four lanes at a time in wasm SIMD, and y = x ⊙ mask in the same pass.
 * kept ⟺ unitAt(seed, i) ≥ rate ⟺ (hash >>> 8) ≥ ⌈rate · 2²⁴⌉, compared as integers, so the
 * mask is bit for bit the one the JS fallback makes.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { FMIX_M1, FMIX_M2, GOLDEN } from '../../../core/random.ts';
import { dropoutScale, DROPOUT_KERNEL } from '../../../models/layers/dropout.ts';
import { f32, f32x4, forRange, i32, i32x4, ModuleBuilder, seq, v128, type Code, type Local } from './wasm-builder.ts';
import { heapFunctions, heapOffset } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs } from './wasm-internals.ts';

interface IntOps {
  mul(a: Code, b: Code): Code;
  xor(a: Code, b: Code): Code;
  shrU(a: Code, bits: Code): Code;
  constant(n: number): Code;
}

/** fmix32(index · GOLDEN ^ key) >>> 8 (core/random's hashAt, top 24 bits), in the local h. */
function hash24(ops: IntOps, h: Local, index: Code, key: Code): Code {
  const xorShift = (bits: number) => h.set(ops.xor(h.get(), ops.shrU(h.get(), i32.const(bits))));
  return seq(
    h.set(ops.xor(ops.mul(index, ops.constant(GOLDEN)), key)),
    xorShift(16),
    h.set(ops.mul(h.get(), ops.constant(FMIX_M1))),
    xorShift(13),
    h.set(ops.mul(h.get(), ops.constant(FMIX_M2))),
    xorShift(16),
    ops.shrU(h.get(), i32.const(8)),
  );
}

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  const f = m.func('dropout', ['x', 'y', 'mask', 'n', 'key', 'threshold', 'scaleBits']);
  const [x, y, mask, n, key, threshold, scaleBits] = f.params;
  const i = f.local('i32');
  const end4 = f.local('i32');
  const h4 = f.local('v128');
  const m4 = f.local('v128');
  const h = f.local('i32');
  const m1 = f.local('f32');
  const vec: IntOps = { mul: i32x4.mul, xor: v128.xor, shrU: i32x4.shrU, constant: (k) => v128.constI32([k, k, k, k]) };
  const sca: IntOps = { mul: i32.mul, xor: i32.xor, shrU: i32.shrU, constant: (k) => i32.const(k) };
  const addr = (base: typeof x) => i32.add(base.get(), i32.shl(i.get(), i32.const(2)));
  const scale = f32.reinterpretI32(scaleBits.get());
  f.emit(
    end4.set(i32.and(n.get(), i32.const(~3))),
    forRange(
      i,
      i32.const(0),
      end4.get(),
      4,
      seq(
        m4.set(
          v128.and(
            i32x4.geS(
              hash24(vec, h4, i32x4.add(i32x4.splat(i.get()), v128.constI32([0, 1, 2, 3])), i32x4.splat(key.get())),
              i32x4.splat(threshold.get()),
            ),
            f32x4.splat(scale),
          ),
        ),
        v128.store(addr(mask), m4.get()),
        v128.store(addr(y), f32x4.mul(v128.load(addr(x)), m4.get())),
      ),
    ),
    forRange(
      i,
      i.get(),
      n.get(),
      1,
      seq(
        m1.set(f32.select(scale, f32.const(0), i32.geS(hash24(sca, h, i.get(), key.get()), threshold.get()))),
        f32.store(addr(mask), m1.get()),
        f32.store(addr(y), f32.mul(f32.load(addr(x)), m1.get())),
      ),
    ),
  );
  return m;
}

export const dropoutKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(DROPOUT_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['x']);
  const x = inputs.x as TensorInfo;
  const { seed, rate } = attrs as { seed: number; rate: number };
  const y = backend.makeOutput(x.shape, 'float32');
  const mask = backend.makeOutput(x.shape, 'float32');
  const scaleBits = new Int32Array(Float32Array.of(dropoutScale(rate)).buffer)[0];
  const threshold = Math.ceil(rate * 2 ** 24);
  const o = (t: TensorInfo) => heapOffset(backend, t);
  heapFunctions(backend, buildModule).dropout(
    o(x),
    o(y),
    o(mask),
    util.sizeFromShape(x.shape),
    seed | 0,
    threshold,
    scaleBits,
  );
  return [y, mask];
};
