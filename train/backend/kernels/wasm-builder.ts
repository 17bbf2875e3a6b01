/* eslint-disable no-bitwise -- LEB128 encoding and alignment masks are bit operations. */
/**
 * A small WebAssembly builder for frost's fused kernels: functions of i32 parameters (byte
 * offsets into the tfjs wasm heap, and sizes), written as nested instruction expressions that
 * encode to the binary format directly, with SIMD128.
 *
 * Why: the fused GRU and attention kernels (gru-cell.ts, additive-attention.ts) need exp in their
 * inner loops. In JS over the heap an element with Math.exp costs 12-20 ns, more than the ~15 small
 * tfjs kernels each fused kernel replaces; as wasm SIMD with a polynomial exp it is ≈ 1-2 ns. The
 * module imports the backend's own WebAssembly.Memory, so it reads and writes tensors in place.
 * frost ships no compiled binary: the bytes are built here when the kernels are first used.
 *
 * Every instruction helper returns the code that leaves its result on the stack (operands first,
 * then the opcode), so kernels read as nested expressions: `f32x4.add(load(a), load(b))`.
 * Opcodes: WebAssembly Core Specification 2.0, §5.4 (SIMD opcodes after the 0xfd prefix).
 */

/**
 * Instruction bytes as a tree: expressions nest their operands' Code instead of copying it, and
 * the tree is flattened once, when the function is encoded (copying at every level made building
 * the attention module take ≈ 0.2 s).
 */
export type Code = readonly CodeItem[];
type CodeItem = number | Code;

function flatten(code: Code, out: number[]): number[] {
  for (const item of code) {
    if (typeof item === 'number') out.push(item);
    else flatten(item, out);
  }
  return out;
}
export type ValType = 'i32' | 'f32' | 'v128';

const VALTYPE: Record<ValType, number> = { i32: 0x7f, f32: 0x7d, v128: 0x7b };

function uleb(n: number): number[] {
  const out: number[] = [];
  let v = n >>> 0;
  do {
    const byte = v & 0x7f;
    v >>>= 7;
    out.push(v === 0 ? byte : byte | 0x80);
  } while (v !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  let v = n | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    const done = (v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

function f32Bytes(x: number): number[] {
  return [...new Uint8Array(Float32Array.of(x).buffer)];
}

function vec(items: readonly (readonly number[])[]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function utf8(s: string): number[] {
  const bytes = new TextEncoder().encode(s);
  return [...uleb(bytes.length), ...bytes];
}

/** Concatenates statements (each leaves nothing on the stack, except possibly the last). */
export function seq(...parts: readonly Code[]): Code {
  return parts;
}

const simd = (op: number, ...operands: Code[]): Code => [operands, 0xfd, uleb(op)];
const memarg = (alignLog2: number, offset: number) => [...uleb(alignLog2), ...uleb(offset)];

export const i32 = {
  const: (n: number): Code => [0x41, sleb(n)],
  add: (a: Code, b: Code): Code => [a, b, 0x6a],
  sub: (a: Code, b: Code): Code => [a, b, 0x6b],
  mul: (a: Code, b: Code): Code => [a, b, 0x6c],
  and: (a: Code, b: Code): Code => [a, b, 0x71],
  xor: (a: Code, b: Code): Code => [a, b, 0x73],
  shl: (a: Code, b: Code): Code => [a, b, 0x74],
  shrU: (a: Code, b: Code): Code => [a, b, 0x76],
  eqz: (a: Code): Code => [a, 0x45],
  geS: (a: Code, b: Code): Code => [a, b, 0x4e],
  ltU: (a: Code, b: Code): Code => [a, b, 0x49],
  load: (addr: Code): Code => [addr, 0x28, memarg(2, 0)],
};

export const f32 = {
  const: (x: number): Code => [0x43, f32Bytes(x)],
  load: (addr: Code, offset = 0): Code => [addr, 0x2a, memarg(2, offset)],
  store: (addr: Code, value: Code, offset = 0): Code => [addr, value, 0x38, memarg(2, offset)],
  add: (a: Code, b: Code): Code => [a, b, 0x92],
  sub: (a: Code, b: Code): Code => [a, b, 0x93],
  mul: (a: Code, b: Code): Code => [a, b, 0x94],
  div: (a: Code, b: Code): Code => [a, b, 0x95],
  min: (a: Code, b: Code): Code => [a, b, 0x96],
  max: (a: Code, b: Code): Code => [a, b, 0x97],
  lt: (a: Code, b: Code): Code => [a, b, 0x5d],
  sqrt: (a: Code): Code => [a, 0x91],
  reinterpretF32ToI32: (a: Code): Code => [a, 0xbc],
  reinterpretI32: (a: Code): Code => [a, 0xbe],
  convertI32S: (a: Code): Code => [a, 0xb2],
  /** cond ? a : b (both evaluated). */
  select: (a: Code, b: Code, cond: Code): Code => [a, b, cond, 0x1b],
};

export const v128 = {
  load: (addr: Code, offset = 0): Code => [simd(0x00, addr), memarg(4, offset)],
  store: (addr: Code, value: Code, offset = 0): Code => [simd(0x0b, addr, value), memarg(4, offset)],
  /** Four equal f32 lanes as an immediate. */
  constF32: (x: number): Code => [0xfd, uleb(0x0c), f32Bytes(x), f32Bytes(x), f32Bytes(x), f32Bytes(x)],
  /** Four i32 lanes as an immediate. */
  constI32: (lanes: readonly [number, number, number, number]): Code => [
    0xfd,
    uleb(0x0c),
    [...new Uint8Array(Int32Array.from(lanes).buffer)],
  ],
  and: (a: Code, b: Code): Code => simd(0x4e, a, b),
  /** a & ~b */
  andnot: (a: Code, b: Code): Code => simd(0x4f, a, b),
  xor: (a: Code, b: Code): Code => simd(0x51, a, b),
};

export const f32x4 = {
  splat: (x: Code): Code => simd(0x13, x),
  extractLane: (v: Code, lane: number): Code => [simd(0x1f, v), lane],
  lt: (a: Code, b: Code): Code => simd(0x43, a, b),
  ge: (a: Code, b: Code): Code => simd(0x46, a, b),
  sqrt: (a: Code): Code => simd(0xe3, a),
  add: (a: Code, b: Code): Code => simd(0xe4, a, b),
  sub: (a: Code, b: Code): Code => simd(0xe5, a, b),
  mul: (a: Code, b: Code): Code => simd(0xe6, a, b),
  div: (a: Code, b: Code): Code => simd(0xe7, a, b),
  /** b < a ? b : a (one minps; NaN in a stays). */
  pmin: (a: Code, b: Code): Code => simd(0xea, a, b),
  /** a < b ? b : a (one maxps; NaN in a stays). */
  pmax: (a: Code, b: Code): Code => simd(0xeb, a, b),
};

export const i32x4 = {
  splat: (x: Code): Code => simd(0x11, x),
  shl: (a: Code, bits: Code): Code => simd(0xab, a, bits),
  shrU: (a: Code, bits: Code): Code => simd(0xad, a, bits),
  add: (a: Code, b: Code): Code => simd(0xae, a, b),
  mul: (a: Code, b: Code): Code => simd(0xb5, a, b),
  geS: (a: Code, b: Code): Code => simd(0x3f, a, b),
};

/** block … end around a loop: `br 1` leaves the loop, `br 0` repeats it. */
function blockLoop(body: Code): Code {
  return [0x02, 0x40, 0x03, 0x40, body, 0x0b, 0x0b];
}

/** if cond { then } (no result). */
export function when(cond: Code, then: Code): Code {
  return [cond, 0x04, 0x40, then, 0x0b];
}

export class Local {
  constructor(
    readonly index: number,
    readonly type: ValType,
  ) {}

  get(): Code {
    return [0x20, uleb(this.index)];
  }

  set(value: Code): Code {
    return [value, 0x21, uleb(this.index)];
  }

  tee(value: Code): Code {
    return [value, 0x22, uleb(this.index)];
  }
}

/** for (i = from; i < to; i += step) body — signed compare; `to` is evaluated every iteration. */
export function forRange(i: Local, from: Code, to: Code, step: number, body: Code): Code {
  return seq(
    i.set(from),
    blockLoop(seq(i32.geS(i.get(), to), [0x0d, 1], body, i.set(i32.add(i.get(), i32.const(step))), [0x0c, 0])),
  );
}

/** A function of i32 parameters and no result. */
export class FunctionBuilder {
  readonly params: Local[];
  private readonly localTypes: ValType[] = [];
  private readonly code: Code[] = [];

  constructor(
    readonly name: string,
    readonly paramNames: readonly string[],
  ) {
    this.params = paramNames.map((_, i) => new Local(i, 'i32'));
  }

  param(name: string): Local {
    const i = this.paramNames.indexOf(name);
    if (i < 0) throw new Error(`wasm function ${this.name}: no parameter '${name}'`);
    return this.params[i];
  }

  local(type: ValType): Local {
    this.localTypes.push(type);
    return new Local(this.params.length + this.localTypes.length - 1, type);
  }

  emit(...statements: Code[]): void {
    this.code.push(...statements);
  }

  encodeBody(): number[] {
    const groups = this.localTypes.map((t) => [1, VALTYPE[t]]);
    const body = flatten([vec(groups), this.code, 0x0b], []);
    return [...uleb(body.length), ...body];
  }
}

function section(id: number, contents: number[]): number[] {
  return [id, ...uleb(contents.length), ...contents];
}

/** A module that imports `env.memory` and exports its functions by name. */
export class ModuleBuilder {
  private readonly functions: FunctionBuilder[] = [];

  func(name: string, params: readonly string[]): FunctionBuilder {
    const f = new FunctionBuilder(name, params);
    this.functions.push(f);
    return f;
  }

  /** The module's bytes; `sharedMemory` for the threaded backend build's shared heap. */
  toBytes(sharedMemory: boolean): Uint8Array {
    const arities = [...new Set(this.functions.map((f) => f.params.length))];
    const types = arities.map((n) => [0x60, ...vec(new Array(n).fill([VALTYPE.i32])), 0]);
    // Memory limits: unshared without a maximum (the heap grows); shared needs one, 4 GiB covers any.
    const limits = sharedMemory ? [0x03, ...uleb(1), ...uleb(65536)] : [0x00, ...uleb(1)];
    const imports = vec([[...utf8('env'), ...utf8('memory'), 0x02, ...limits]]);
    const funcs = vec(this.functions.map((f) => uleb(arities.indexOf(f.params.length))));
    const exports = vec(this.functions.map((f, i) => [...utf8(f.name), 0x00, ...uleb(i)]));
    const code = vec(this.functions.map((f) => f.encodeBody()));
    return Uint8Array.from([
      ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
      ...section(1, vec(types)),
      ...section(2, imports),
      ...section(3, funcs),
      ...section(7, exports),
      ...section(10, code),
    ]);
  }

  /** Compiles and instantiates against `memory` (synchronously: Node allows it at any size). */
  instantiate(memory: WebAssembly.Memory): Record<string, (...args: number[]) => void> {
    const shared = typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;
    const module = new WebAssembly.Module(this.toBytes(shared).buffer as ArrayBuffer);
    const instance = new WebAssembly.Instance(module, { env: { memory } });
    return instance.exports as Record<string, (...args: number[]) => void>;
  }
}
