/* eslint-disable no-bitwise -- alignment masks round sizes down to whole lanes. */
/**
 * Elementwise code written once for four f32 lanes (v128) and for one (the tail of a row whose
 * length is not a multiple of 4), plus exp, σ and tanh on top of it.
 *
 * exp is Cephes' expf: n = round(x·log₂e) (by adding 1.5·2²³), r = x − n·ln2 (ln2 split in two), a degree-6
 * polynomial in r, times 2ⁿ built in the exponent bits. Within 2 ulp of the true value over
 * [−87, 88]; 0 below −87 (where float32 exp is under 1.7e−38), +∞ never (clamped at 88, e⁸⁸ ≈ 1.65e38).
 * NaN stays NaN. σ(x) = 1 / (1 + e^(−x)), tanh(x) = 1 − 2 / (1 + e^(2x)): within ≈ 1.2e−7 absolute
 * of tanh over the whole line (relative error grows for |x| < 1e−3, as with the 2σ(2x) − 1 form
 * elementwise.ts uses for Tanh), which the tests bound against Math.tanh.
 */
import type { TensorInfo } from '@tensorflow/tfjs-core';
import {
  f32,
  f32x4,
  forRange,
  i32,
  i32x4,
  Local,
  seq,
  v128,
  type Code,
  type FunctionBuilder,
  type ModuleBuilder,
  type ValType,
} from './wasm-builder.ts';
import { tensorData, type WasmBackend } from './wasm-internals.ts';

export interface Lanes {
  readonly width: 1 | 4;
  readonly type: ValType;
  load(addr: Code): Code;
  store(addr: Code, value: Code): Code;
  /** A scalar f32 in every lane. */
  splat(x: Code): Code;
  constant(x: number): Code;
  add(a: Code, b: Code): Code;
  sub(a: Code, b: Code): Code;
  mul(a: Code, b: Code): Code;
  div(a: Code, b: Code): Code;
  sqrt(a: Code): Code;
  /** b < a ? b : a (a NaN in a stays). */
  min(a: Code, b: Code): Code;
  /** a < b ? b : a (a NaN in a stays). */
  max(a: Code, b: Code): Code;
  /**
   * 2ⁿ from k = n + 1.5·2²³ (n whole, in [−126, 127]), whose low mantissa bits hold n as an integer:
   * the bits of k plus 127, shifted into the exponent field (the magic number's own bits shift out).
   */
  pow2FromMagic(k: Code): Code;
  /** value where x ≥ limit, 0 where x < limit. */
  zeroBelow(value: Code, x: Code, limit: number): Code;
}

const VECTOR: Lanes = {
  width: 4,
  type: 'v128',
  load: (addr) => v128.load(addr),
  store: (addr, value) => v128.store(addr, value),
  splat: (x) => f32x4.splat(x),
  constant: (x) => v128.constF32(x),
  add: f32x4.add,
  sub: f32x4.sub,
  mul: f32x4.mul,
  div: f32x4.div,
  sqrt: f32x4.sqrt,
  min: f32x4.pmin,
  max: f32x4.pmax,
  pow2FromMagic: (k) => i32x4.shl(i32x4.add(k, i32x4.splat(i32.const(127))), i32.const(23)),
  zeroBelow: (value, x, limit) => v128.andnot(value, f32x4.lt(x, v128.constF32(limit))),
};

const SCALAR: Lanes = {
  width: 1,
  type: 'f32',
  load: (addr) => f32.load(addr),
  store: (addr, value) => f32.store(addr, value),
  splat: (x) => x,
  constant: (x) => f32.const(x),
  add: f32.add,
  sub: f32.sub,
  mul: f32.mul,
  div: f32.div,
  sqrt: f32.sqrt,
  min: (a, b) => f32.select(b, a, f32.lt(b, a)),
  max: (a, b) => f32.select(b, a, f32.lt(a, b)),
  pow2FromMagic: (k) => f32.reinterpretI32(i32.shl(i32.add(f32.reinterpretF32ToI32(k), i32.const(127)), i32.const(23))),
  zeroBelow: (value, x, limit) => f32.select(f32.const(0), value, f32.lt(x, f32.const(limit))),
};

const LOG2E = 1.4426950408889634;
const LN2_HI = 0.693359375;
const LN2_LO = -2.1219444e-4;
const EXP_POLY = [1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1];
const EXP_MIN = -87;
/** 1.5·2²³: adding it rounds to a whole number, which lands in the low mantissa bits. */
const ROUND_MAGIC = 12582912;
const EXP_MAX = 88;

/** e^x (see the header); x is evaluated once. */
export function exp(f: FunctionBuilder, L: Lanes, x: Code): Code {
  const xs = f.local(L.type);
  const t = f.local(L.type);
  const k = f.local(L.type);
  const n = f.local(L.type);
  let p = L.constant(EXP_POLY[0]);
  for (const c of EXP_POLY.slice(1)) p = L.add(L.mul(p, t.get()), L.constant(c));
  return seq(
    xs.set(x),
    t.set(L.max(L.min(xs.get(), L.constant(EXP_MAX)), L.constant(EXP_MIN))),
    k.set(L.add(L.mul(t.get(), L.constant(LOG2E)), L.constant(ROUND_MAGIC))),
    n.set(L.sub(k.get(), L.constant(ROUND_MAGIC))),
    t.set(L.sub(L.sub(t.get(), L.mul(n.get(), L.constant(LN2_HI))), L.mul(n.get(), L.constant(LN2_LO)))),
    // (p·r² + r + 1)·2ⁿ
    L.zeroBelow(
      L.mul(L.add(L.add(L.mul(p, L.mul(t.get(), t.get())), t.get()), L.constant(1)), L.pow2FromMagic(k.get())),
      xs.get(),
      EXP_MIN,
    ),
  );
}

/** σ(x) = 1 / (1 + e^(−x)). */
export function sigmoid(f: FunctionBuilder, L: Lanes, x: Code): Code {
  return L.div(L.constant(1), L.add(L.constant(1), exp(f, L, L.sub(L.constant(0), x))));
}

/** tanh(x) = 1 − 2 / (1 + e^(2x)). */
export function tanh(f: FunctionBuilder, L: Lanes, x: Code): Code {
  return L.sub(L.constant(1), L.div(L.constant(2), L.add(L.constant(1), exp(f, L, L.add(x, x)))));
}

/**
 * The loops of lanesLoop and lanesSum over j (a byte offset): `groups` vectors a step while they fit, then one
 * vector a step up to the last multiple of 16 bytes, `between`, then one f32 a step.
 */
function laneLoops(
  f: FunctionBuilder,
  bytes: Local,
  groups: number,
  vector: (j: Local, n: number) => Code,
  scalar: (j: Local) => Code,
  between: Code = [],
): Code {
  const j = f.local('i32');
  const end4 = f.local('i32');
  const grouped = () => {
    const endGroups = f.local('i32'); // j + 16·groups ≤ end4 ⟺ j < end4 − 16·(groups − 1)
    return seq(
      endGroups.set(i32.sub(end4.get(), i32.const(16 * (groups - 1)))),
      forRange(j, i32.const(0), endGroups.get(), 16 * groups, vector(j, groups)),
    );
  };
  return seq(
    end4.set(i32.and(bytes.get(), i32.const(~15))),
    groups > 1 ? grouped() : j.set(i32.const(0)),
    forRange(j, j.get(), end4.get(), 16, vector(j, 1)),
    between,
    forRange(j, j.get(), bytes.get(), 4, scalar(j)),
  );
}

/**
 * for (j = 0; j < bytes; j += 4·width) body(lanes, j): the 4-lane body up to the last multiple of 16
 * bytes, then the 1-lane body for the rest. `j` is a byte offset, so addresses are base + j.
 *
 * With `groups` > 1 the first loop takes that many vectors a step: body(lanes, j, n) covers the n groups of
 * lanes at j, j + 16, …, j + 16·(n − 1) (n = groups there, 1 in the loops after it). A body that accumulates
 * along a dependent chain (a sum over a kernel's taps) keeps one sum per group, which hides f32x4.add's latency.
 */
export function lanesLoop(
  f: FunctionBuilder,
  bytes: Local,
  body: (L: Lanes, j: Local, n: number) => Code,
  groups = 1,
): Code {
  return laneLoops(
    f,
    bytes,
    groups,
    (j, n) => body(VECTOR, j, n),
    (j) => body(SCALAR, j, 1),
  );
}

/**
 * Σ_j term(lanes, j, offset) over the same range as lanesLoop, as an f32 expression (the statements in
 * term's Code run before its value; the term's elements are at base + j + offset). Four partial sums in the
 * vector part, added at the end; with `groups` > 1, that many vectors of them (independent chains).
 */
export function lanesSum(
  f: FunctionBuilder,
  bytes: Local,
  term: (L: Lanes, j: Local, offset: number) => Code,
  groups = 1,
): Code {
  const accs = Array.from({ length: groups }, () => f.local('v128'));
  const vectors = groups === 1 ? accs[0] : f.local('v128');
  const acc = f.local('f32');
  const lane = (k: number) => f32x4.extractLane(vectors.get(), k);
  return seq(
    ...accs.map((a) => a.set(v128.constF32(0))),
    laneLoops(
      f,
      bytes,
      groups,
      (j, n) => seq(...accs.slice(0, n).map((a, g) => a.set(f32x4.add(a.get(), term(VECTOR, j, 16 * g))))),
      (j) => acc.set(f32.add(acc.get(), term(SCALAR, j, 0))),
      seq(
        groups === 1 ? [] : vectors.set(accs.slice(1).reduce<Code>((sum, a) => f32x4.add(sum, a.get()), accs[0].get())),
        acc.set(f32.add(f32.add(lane(0), lane(1)), f32.add(lane(2), lane(3)))),
      ),
    ),
    acc.get(),
  );
}

/**
 * for (n = 0; n < rows; n++) { row = base + n · rowBytes for each [row, base] pair; body }: the loop of a kernel that
 * works one [rows, cols] row at a time.
 */
export function forEachRow(n: Local, rows: Local, rowBytes: Local, rowsOf: [Local, Local][], ...body: Code[]): Code {
  return forRange(
    n,
    i32.const(0),
    rows.get(),
    1,
    seq(...rowsOf.map(([row, base]) => row.set(i32.add(base.get(), i32.mul(n.get(), rowBytes.get())))), ...body),
  );
}

/** base + j (+ offset) (byte addresses). */
export function at(base: Local, j: Local, offset = 0): Code {
  return offset === 0 ? i32.add(base.get(), j.get()) : i32.add(i32.add(base.get(), j.get()), i32.const(offset));
}

export { Local };

export type HeapFunctions = Record<string, (...args: number[]) => void>;

const instances = new WeakMap<() => ModuleBuilder, WeakMap<WebAssembly.Memory, HeapFunctions>>();

/**
 * The functions of the module `build` makes, instantiated once per backend heap. The heap is the
 * backend module's exported memory (emscripten keeps the exports as Module.asm; the threaded build
 * also as Module.wasmMemory).
 */
export function heapFunctions(backend: WasmBackend, build: () => ModuleBuilder): HeapFunctions {
  const wasm = backend.wasm as WasmBackend['wasm'] & { asm?: { memory?: WebAssembly.Memory } };
  const memory = wasm.wasmMemory ?? wasm.asm?.memory;
  if (!(memory instanceof WebAssembly.Memory))
    throw new Error('frost fused kernels: the wasm backend does not expose its memory');
  let byMemory = instances.get(build);
  if (byMemory == null) {
    byMemory = new WeakMap();
    instances.set(build, byMemory);
  }
  let fns = byMemory.get(memory);
  if (fns == null) {
    fns = build().instantiate(memory);
    byMemory.set(memory, fns);
  }
  return fns;
}

/** The byte offset of a tensor on the heap (0 for an absent optional input: no tensor lives there). */
export function heapOffset(backend: WasmBackend, t: TensorInfo | undefined): number {
  return t == null ? 0 : tensorData(backend, t).memoryOffset;
}
