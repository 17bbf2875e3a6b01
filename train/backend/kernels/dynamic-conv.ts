/**
 * FrostDynamicConv and FrostDynamicConvGrad (the contract is in models/layers/dynamic-conv.ts) for the wasm backend,
 * in wasm SIMD over the heap (wasm-builder.ts). Lanes run over the R = C/H channels of a head, 4 at a time with a
 * scalar tail (lanesLoop), so any R works, 1 included.
 *
 *  - y and dx are one banded sum each, written once per element: for a position s, a head h and four channels,
 *    acc = Σ_k w · in[row_k] over the k whose row is inside [0, T) (the bounds are clipped per position: that is
 *    the zero padding), then stored. y reads x at rows s − padLeft + k; dx is the gather form of the contract,
 *    dx[s] = Σ_k w[s + padLeft − k, h, k] · dy[s + padLeft − k], rows walked backwards, so dx needs no zeroing
 *    and no read-modify-write. Each k step is one scalar weight load, a splat, a row load and a mul-add.
 *  - dweights is a lanes dot product of dy[b,t] and x[b, t + k − padLeft] per (b, t, h, k in range), stored into
 *    [B, T, H, K] (out-of-range k stay 0) or added into [H, K] for shared weights.
 *
 * Each lanes loop takes four vectors a step (lanesLoop's groups): one sum per vector, four independent chains of
 * f32x4.add instead of one, which made the forward 1.5-2× faster at K ≥ 15 (one chain is latency-bound at
 * ≈ 2 flops a cycle).
 *
 * What it replaced: the tfjs-ops fallback, K shifted slices of the padded input with a Multiply and an Add each
 * forward, and per k a Multiply, a PadV2, an Add, a Multiply and a Sum backward (≈ 3K and ≈ 6K kernel calls, each
 * a pass over [B, T, C]). bench:kernels (bench/wasm-kernels.ts), 64 × 64 tokens, C 256, H 4 (R 64), causal, K 3,
 * 15 and 31, dynamic and shared weights, kernel and ops interleaved on the 2-vCPU dev VM at load 9-11: forward
 * 1.1-7.7 ms against 70-420 ms (11-150×), backward 1.8-19 ms against 150-1050 ms (35-87×); 6-17 GFLOP/s forward
 * (2·B·T·C·K; one K 3 row read 0.8, a 7.7 ms median under that load) and 2-13 backward (4·B·T·C·K: dx and
 * dweights). Alone and warmed up (fastest of 21 calls): 25-28 GFLOP/s forward at K ≥ 15 and 13 at K 3, 17-24
 * backward. Run right after other work has evicted x and y (4 MB each here), a call costs ≈ 1.5-2 ms more: at
 * small K the passes are bound by memory.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { convShape, DYNAMIC_CONV_GRAD_KERNEL, DYNAMIC_CONV_KERNEL } from '../../../models/layers/dynamic-conv.ts';
import { f32, forRange, i32, ModuleBuilder, seq, when, type Code, type FunctionBuilder } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesLoop, lanesSum, type Local } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs, f32View, type WasmBackend } from './wasm-internals.ts';

const PARAMS = ['src', 'w', 'out', 'B', 'T', 'H', 'R', 'K', 'padLeft'] as const;
const bandName = (reverse: boolean, perStep: boolean) => `dconv_${reverse ? 'dx' : 'y'}_${Number(perStep)}`;
const weightsGradName = (perStep: boolean) => `dconv_dw_${Number(perStep)}`;

/** Vectors a step of the lanes loops: independent sums hide f32x4.add's latency (the bench's figures). */
const GROUPS = 4;

const plus = (addr: Code, offset: number): Code => (offset === 0 ? addr : i32.add(addr, i32.const(offset)));

/** Byte offset of row `row` of a tensor of rows of `rowBytes`, from `base`. */
const rowAt = (base: Local, row: Code, rowBytes: Local): Code => i32.add(base.get(), i32.mul(row, rowBytes.get()));

/**
 * The k of one position whose row is inside [0, T): [kLo, kHi) with kLo = max(0, lo), kHi = min(K, hi), and the
 * row at kLo, lo + first (forward: first row s − padLeft + kLo; backward: s + padLeft − kLo).
 */
function clipKernel(kLo: Local, kHi: Local, K: Local, lo: Code, hi: Code): Code {
  return seq(
    kLo.set(lo),
    when(i32.geS(i32.const(0), kLo.get()), kLo.set(i32.const(0))),
    kHi.set(hi),
    when(i32.geS(kHi.get(), K.get()), kHi.set(K.get())),
  );
}

/** The locals and loop of every function here: for b, for s, with the position's clipped k range. */
interface Position {
  f: FunctionBuilder;
  p: Record<(typeof PARAMS)[number], Local>;
  b: Local;
  s: Local;
  kLo: Local;
  kHi: Local;
  rowBytes: Local;
  headBytes: Local;
}

function positions(m: ModuleBuilder, name: string, reverse: boolean, body: (pos: Position) => Code): void {
  const f = m.func(name, PARAMS);
  const p = Object.fromEntries(PARAMS.map((n) => [n, f.param(n)])) as Position['p'];
  const pos: Position = {
    f,
    p,
    b: f.local('i32'),
    s: f.local('i32'),
    kLo: f.local('i32'),
    kHi: f.local('i32'),
    rowBytes: f.local('i32'),
    headBytes: f.local('i32'),
  };
  const { b, s, kLo, kHi, rowBytes, headBytes } = pos;
  const { T, H, R, K, padLeft } = p;
  // forward (and dweights): t + k − padLeft ∈ [0, T); backward: s + padLeft − k ∈ [0, T)
  const lo = reverse
    ? i32.add(i32.sub(i32.add(s.get(), padLeft.get()), T.get()), i32.const(1))
    : i32.sub(padLeft.get(), s.get());
  const hi = reverse
    ? i32.add(i32.add(s.get(), padLeft.get()), i32.const(1))
    : i32.sub(i32.add(T.get(), padLeft.get()), s.get());
  f.emit(
    headBytes.set(i32.shl(R.get(), i32.const(2))),
    rowBytes.set(i32.mul(H.get(), headBytes.get())),
    forRange(
      b,
      i32.const(0),
      p.B.get(),
      1,
      forRange(s, i32.const(0), T.get(), 1, seq(clipKernel(kLo, kHi, K, lo, hi), body(pos))),
    ),
  );
}

/**
 * out[b,s,h·R + j] = Σ_{k in range} w_k · src[b, row_k, h·R + j]: y (row_k = s − padLeft + k, w[·,h,k]) or, with
 * `reverse`, dx (row_k = s + padLeft − k, w at [b, row_k, h, k]).
 */
function buildBand(m: ModuleBuilder, reverse: boolean, perStep: boolean): void {
  positions(m, bandName(reverse, perStep), reverse, (pos) => {
    const { f, p, b, s, kLo, kHi, rowBytes, headBytes } = pos;
    const { src, w, out, T, H, K, padLeft } = p;
    const h = f.local('i32');
    const k = f.local('i32');
    const firstRow = f.local('i32'); // b·T + row at kLo
    const srcHead = f.local('i32');
    const wHead = f.local('i32');
    const outHead = f.local('i32');
    const xa = f.local('i32');
    const wa = f.local('i32');
    const bT = i32.mul(b.get(), T.get());
    const row = reverse
      ? i32.sub(i32.add(s.get(), padLeft.get()), kLo.get())
      : i32.sub(i32.add(s.get(), kLo.get()), padLeft.get());
    // The weights' row: the output's position forward, the source row backward; none when shared.
    const wRow = perStep ? i32.mul(reverse ? firstRow.get() : i32.add(bT, s.get()), H.get()) : i32.const(0);
    const rowStep = reverse ? i32.sub(i32.const(0), rowBytes.get()) : rowBytes.get();
    // Backward with per-step weights: k + 1 is one row earlier, H·K floats back, one float on.
    const wStep =
      reverse && perStep ? i32.shl(i32.sub(i32.const(1), i32.mul(H.get(), K.get())), i32.const(2)) : i32.const(4);
    return seq(
      firstRow.set(i32.add(bT, row)),
      srcHead.set(rowAt(src, firstRow.get(), rowBytes)),
      outHead.set(rowAt(out, i32.add(bT, s.get()), rowBytes)),
      wHead.set(i32.add(w.get(), i32.shl(i32.add(i32.mul(wRow, K.get()), kLo.get()), i32.const(2)))),
      forRange(
        h,
        i32.const(0),
        H.get(),
        1,
        seq(
          lanesLoop(
            f,
            headBytes,
            (L, j, n) => {
              const accs = Array.from({ length: n }, () => f.local(L.type));
              const wk = f.local(L.type);
              return seq(
                ...accs.map((acc) => acc.set(L.constant(0))),
                xa.set(at(srcHead, j)),
                wa.set(wHead.get()),
                forRange(
                  k,
                  kLo.get(),
                  kHi.get(),
                  1,
                  seq(
                    wk.set(L.splat(f32.load(wa.get()))),
                    ...accs.map((acc, g) => acc.set(L.add(acc.get(), L.mul(wk.get(), L.load(plus(xa.get(), 16 * g)))))),
                    xa.set(i32.add(xa.get(), rowStep)),
                    wa.set(i32.add(wa.get(), wStep)),
                  ),
                ),
                ...accs.map((acc, g) => L.store(at(outHead, j, 16 * g), acc.get())),
              );
            },
            GROUPS,
          ),
          srcHead.set(i32.add(srcHead.get(), headBytes.get())),
          outHead.set(i32.add(outHead.get(), headBytes.get())),
          wHead.set(i32.add(wHead.get(), i32.shl(K.get(), i32.const(2)))),
        ),
      ),
    );
  });
}

/**
 * dw[·,h,k] (+)= Σ_j dy[b,t,h·R + j] · x[b, t + k − padLeft, h·R + j] for the k in range; `out` is zeroed by the
 * caller. Here src is dy and w is x.
 */
function buildWeightsGrad(m: ModuleBuilder, perStep: boolean): void {
  positions(m, weightsGradName(perStep), false, (pos) => {
    const { f, p, b, s, kLo, kHi, rowBytes, headBytes } = pos;
    const { src: dy, w: x, out: dw, T, H, K, padLeft } = p;
    const h = f.local('i32');
    const k = f.local('i32');
    const dyHead = f.local('i32');
    const xHead = f.local('i32');
    const xa = f.local('i32');
    const dwAt = f.local('i32');
    const bT = i32.mul(b.get(), T.get());
    const dwRow = perStep ? i32.mul(i32.add(bT, s.get()), H.get()) : i32.const(0);
    return seq(
      dyHead.set(rowAt(dy, i32.add(bT, s.get()), rowBytes)),
      xHead.set(rowAt(x, i32.sub(i32.add(i32.add(bT, s.get()), kLo.get()), padLeft.get()), rowBytes)),
      dwAt.set(i32.add(dw.get(), i32.shl(i32.add(i32.mul(dwRow, K.get()), kLo.get()), i32.const(2)))),
      forRange(
        h,
        i32.const(0),
        H.get(),
        1,
        seq(
          xa.set(xHead.get()),
          forRange(
            k,
            kLo.get(),
            kHi.get(),
            1,
            seq(
              f32.store(
                dwAt.get(),
                f32.add(
                  perStep ? f32.const(0) : f32.load(dwAt.get()),
                  lanesSum(f, headBytes, (L, j, o) => L.mul(L.load(at(dyHead, j, o)), L.load(at(xa, j, o))), GROUPS),
                ),
              ),
              xa.set(i32.add(xa.get(), rowBytes.get())),
              dwAt.set(i32.add(dwAt.get(), i32.const(4))),
            ),
          ),
          dyHead.set(i32.add(dyHead.get(), headBytes.get())),
          xHead.set(i32.add(xHead.get(), headBytes.get())),
          // on to (h + 1, kLo): past this head's K − (kHi − kLo) out-of-range weights
          dwAt.set(i32.add(dwAt.get(), i32.shl(i32.sub(K.get(), i32.sub(kHi.get(), kLo.get())), i32.const(2)))),
        ),
      ),
    );
  });
}

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  for (const perStep of [false, true]) {
    buildBand(m, false, perStep);
    buildBand(m, true, perStep);
    buildWeightsGrad(m, perStep);
  }
  return m;
}

interface Checked {
  backend: WasmBackend;
  x: TensorInfo;
  weights: TensorInfo;
  dims: ReturnType<typeof convShape>;
  /** The arguments after the three pointers: B, T, H, R, K, padLeft. */
  sizes: number[];
}

function checked(
  kernel: string,
  b: unknown,
  inputs: Record<string, TensorInfo | undefined>,
  required: string[],
  attrs: unknown,
): Checked {
  const backend = asWasmBackend(b);
  checkKernelInputs(kernel, inputs, required);
  const { x, weights } = inputs as Record<string, TensorInfo>;
  const padLeft = (attrs as { padLeft?: number }).padLeft ?? NaN;
  const dims = convShape(x.shape, weights.shape, padLeft);
  const { B, T, C, H, K } = dims;
  return { backend, x, weights, dims, sizes: [B, T, H, C / H, K, padLeft] };
}

export const dynamicConvKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const ins = inputs as Record<string, TensorInfo | undefined>;
  const { backend, x, weights, dims, sizes } = checked(DYNAMIC_CONV_KERNEL, b, ins, ['x', 'weights'], attrs);
  const y = backend.makeOutput(x.shape, 'float32');
  const o = (t: TensorInfo) => heapOffset(backend, t);
  heapFunctions(backend, buildModule)[bandName(false, !dims.shared)](o(x), o(weights), o(y), ...sizes);
  return [y];
};

export const dynamicConvGradKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const ins = inputs as Record<string, TensorInfo | undefined>;
  const { backend, x, weights, dims, sizes } = checked(DYNAMIC_CONV_GRAD_KERNEL, b, ins, ['dy', 'x', 'weights'], attrs);
  const dy = ins.dy!;
  if (dy.shape.length !== x.shape.length || dy.shape.some((n, i) => n !== x.shape[i]))
    throw new RangeError(
      `${DYNAMIC_CONV_GRAD_KERNEL}: dy [${dy.shape.join(', ')}] must be x's [${x.shape.join(', ')}]`,
    );
  const dx = backend.makeOutput(x.shape, 'float32');
  const dw = backend.makeOutput(weights.shape, 'float32');
  f32View(backend, dw).fill(0);
  const o = (t: TensorInfo) => heapOffset(backend, t);
  const fns = heapFunctions(backend, buildModule);
  fns[bandName(true, !dims.shared)](o(dy), o(weights), o(dx), ...sizes);
  fns[weightsGradName(!dims.shared)](o(dy), o(x), o(dw), ...sizes);
  return [dx, dw];
};
