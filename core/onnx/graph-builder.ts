/**
 * GraphBuilder: frost's own ONNX emitter. Builds a graph node by node and
 * serialises it to a ModelProto; isomorphic (no Node APIs), so models can be
 * exported in the browser too.
 *
 * Naming rules (all names live in one SSA namespace shared with subgraphs):
 *  - Graph input and output names are used as given: they are the model's
 *    public interface.
 *  - Every other name (initializers, node names, explicit node output names,
 *    fresh names) gets the current scope prefix, e.g. `encoder/`, unless it
 *    already starts with it (so `initializer('head/W', ...)` inside
 *    `scope('head', ...)` stays `head/W`).
 *  - Defining a value name twice, or a node name twice, throws.
 *
 * Opset differences are handled by the helpers `reduce`, `split`, `slice`,
 * `squeeze`, `unsqueeze`: they pass axes/sizes as inputs or attributes as the
 * graph's opset requires. `node()` itself writes exactly what it is given.
 */
import { encodeAttribute } from './attributes.ts';
import { assertDType, onnxDataType } from './dtype.ts';
import {
  encodeModel,
  type GraphProtoObject,
  type NodeProtoObject,
  type TensorProtoObject,
  type ValueInfoProtoObject,
} from './proto.ts';
import { elementCount, encodeTensor, tensorBytes } from './tensor.ts';
import type { AttrValue, DType, Dim, TensorValue } from './types.ts';

export type { AttrValue, DType, Dim, TensorData, TensorValue, TypedAttr } from './types.ts';

/** ONNX IR version written by {@link GraphBuilder.toBytes}; IR 8 is the one that goes with opset 18. */
const IR_VERSION = 8;
/** Default opset of the default ('' = ai.onnx) domain. */
export const DEFAULT_OPSET = 18;

/** Options of a GraphBuilder. */
export interface GraphBuilderOptions {
  /** Opset of the default ONNX domain (default 18). */
  opset?: number;
  /** Graph doc string. */
  docString?: string;
  /** Versions of other operator domains used by nodes (e.g. `{ 'com.microsoft': 1 }`); unlisted ones get version 1. */
  domains?: Record<string, number>;
  /** Written as ModelProto.producer_version. */
  producerVersion?: string;
}

/** State shared by a graph and all its subgraphs, which form one SSA namespace. */
interface SharedNames {
  /** Every value name defined anywhere in the model. */
  values: Set<string>;
  /** Names handed out by fresh() (defined or not yet). */
  issued: Set<string>;
  /** Next suffix per fresh() prefix. */
  counters: Map<string, number>;
  nodeNames: Set<string>;
  /** Payload bytes of every initializer, subgraphs' included, for initializerBytesByScope(). */
  initializerBytes: Map<string, number>;
  /** Domains used by nodes, with their versions. */
  domains: Map<string, number>;
}

/** Constants of up to this many elements are shared when the same value is asked for twice. */
const MAX_CACHED_CONSTANT = 64;

function valueInfo(name: string, dtype: DType, dims: Dim[]): ValueInfoProtoObject {
  assertDType(dtype);
  return {
    name,
    type: {
      tensor_type: {
        elem_type: onnxDataType(dtype),
        shape: {
          dim: dims.map((d) => {
            if (typeof d === 'string') {
              if (d === '') throw new Error(`value '${name}': symbolic dim names must not be empty`);
              return { dim_param: d };
            }
            if (!Number.isInteger(d) || d < 0) throw new Error(`value '${name}': invalid dim ${d}`);
            return { dim_value: d };
          }),
        },
      },
    },
  };
}

/** Builds an ONNX graph and serialises it as a model. See the module doc for the naming rules. */
export class GraphBuilder {
  readonly name: string;
  /** Opset of the default domain; decides how the axis-taking helpers emit their ops. */
  readonly opset: number;
  private readonly docString: string | undefined;
  private readonly producerVersion: string | undefined;
  private readonly nodes: NodeProtoObject[] = [];
  private readonly initializers: TensorProtoObject[] = [];
  private readonly inputs: ValueInfoProtoObject[] = [];
  private readonly outputs: ValueInfoProtoObject[] = [];
  /** Values visible in this graph (its own; ancestors' are found through `parent`). */
  private readonly locals = new Set<string>();
  private readonly constants = new Map<string, string>();
  private scopePath: string[] = [];
  private parent: GraphBuilder | undefined;
  private shared: SharedNames;

  constructor(name: string, opts: GraphBuilderOptions = {}) {
    this.name = name;
    this.opset = opts.opset ?? DEFAULT_OPSET;
    if (!Number.isInteger(this.opset) || this.opset < 1) throw new Error(`invalid opset ${opts.opset}`);
    this.docString = opts.docString;
    this.producerVersion = opts.producerVersion;
    this.shared = {
      values: new Set(),
      issued: new Set(),
      counters: new Map(),
      nodeNames: new Set(),
      initializerBytes: new Map(),
      domains: new Map(Object.entries(opts.domains ?? {})),
    };
  }

  /**
   * A builder for a subgraph (the body of If/Loop/Scan), to pass as `{ graph }`.
   * It shares this graph's namespace, so its names cannot clash with outer
   * ones, and its nodes may read this graph's values (outer scope).
   */
  subgraph(name: string): GraphBuilder {
    const g = new GraphBuilder(name, { opset: this.opset });
    g.parent = this;
    g.shared = this.shared;
    g.scopePath = [...this.scopePath];
    return g;
  }

  /** Declares a graph input (name used as given, not scoped); returns its name. */
  input(name: string, dtype: DType, dims: Dim[]): string {
    const info = valueInfo(name, dtype, dims);
    this.define(name);
    this.inputs.push(info);
    return name;
  }

  /**
   * Declares `value` a graph output under `name` (used as given, not scoped).
   * Inserts an Identity when the names differ, so internal names stay free.
   */
  output(value: string, name: string, dtype: DType, dims: Dim[]): void {
    const info = valueInfo(name, dtype, dims);
    if (this.outputs.some((o) => o.name === name)) throw new Error(`duplicate graph output '${name}'`);
    if (value !== name) {
      this.emit('Identity', [value], {}, this.fresh(`${name}/Identity`), [name], '');
    } else if (!this.isVisible(value)) {
      throw new Error(`graph output '${name}' is not a value of this graph`);
    }
    this.outputs.push(info);
  }

  /** Adds an initializer (stored weight) under the scoped `name`; returns that name. Throws on duplicates. */
  initializer(name: string, t: TensorValue): string {
    const full = this.scoped(name);
    const proto = encodeTensor(t, full);
    this.define(full);
    this.initializers.push(proto);
    this.shared.initializerBytes.set(full, tensorBytes(proto));
    return full;
  }

  /**
   * A small constant stored as an initializer with a unique name. `dims`
   * defaults to a scalar for a number and to `[n]` for a list. Identical
   * small constants in the same scope share one initializer.
   */
  constant(dtype: DType, values: number | number[] | TensorValue['data'], dims?: number[], nameHint = 'const'): string {
    assertDType(dtype);
    const data = typeof values === 'number' ? [values] : values;
    const shape = dims ?? (typeof values === 'number' ? [] : [data.length]);
    if (elementCount(shape) !== data.length) {
      throw new Error(`constant has ${data.length} values but dims [${shape.join(', ')}]`);
    }
    let key: string | undefined;
    if (data.length <= MAX_CACHED_CONSTANT) {
      const text = Array.from(data as ArrayLike<number | bigint>, (v) => (Object.is(v, -0) ? '-0' : String(v)));
      key = `${this.prefix()}|${dtype}|${data.constructor.name}|${shape.join(',')}|${text.join(',')}`;
      const hit = this.constants.get(key);
      if (hit !== undefined) return hit;
    }
    const name = this.initializer(this.fresh(nameHint), { dtype, dims: shape, data });
    if (key !== undefined) this.constants.set(key, name);
    return name;
  }

  /** A float32 constant (see {@link constant}). */
  constFloat(values: number | number[] | Float32Array, dims?: number[], nameHint?: string): string {
    return this.constant('float32', values, dims, nameHint);
  }

  /** An int64 constant (see {@link constant}). */
  constInt64(values: number | number[], dims?: number[], nameHint?: string): string {
    return this.constant('int64', values, dims, nameHint);
  }

  /**
   * Adds a node and returns its output names. `outputs` is a count (names are
   * generated as `<node name>:<i>`) or explicit names (scoped; '' skips an
   * optional output). Inputs must already be defined here or in an enclosing
   * graph; '' marks a skipped optional input. Attributes set to `undefined`
   * are left out.
   */
  node(
    opType: string,
    inputs: string[],
    attrs: Record<string, AttrValue | undefined> = {},
    opts: { outputs?: number | string[]; name?: string; domain?: string } = {},
  ): string[] {
    const nodeName = opts.name === undefined ? this.fresh(opType) : this.scoped(opts.name);
    const spec = opts.outputs ?? 1;
    let outputs: string[];
    if (typeof spec === 'number') {
      if (!Number.isInteger(spec) || spec < 1) throw new Error(`${opType}: invalid output count ${spec}`);
      outputs = Array.from({ length: spec }, (_, i) => `${nodeName}:${i}`);
    } else {
      outputs = spec.map((o) => (o === '' ? o : this.scoped(o)));
    }
    return this.emit(opType, inputs, attrs, nodeName, outputs, opts.domain ?? '');
  }

  /**
   * Adds the constant row `row` to the bias of the Gemm that produced `value`, instead of emitting an Add over its
   * output: an elementwise pass over an [N, |V|] output layer saved every step. Only where that is the same
   * computation: `value` is a plain Gemm's (alpha = beta = 1) output that nothing reads yet, and its bias an
   * initializer of this graph, float32, of `row`'s length, read by that Gemm alone. Where `row` is 0 the sum is the
   * bias bit for bit.
   * @returns `value` when the bias took the row; undefined when the caller must add it itself
   */
  addToGemmBias(value: string, row: Float32Array): string | undefined {
    const gemm = this.nodes.find((n) => n.output[0] === value);
    if (gemm?.op_type !== 'Gemm' || (gemm.domain ?? '') !== '' || gemm.input.length < 3) return undefined;
    const plain = (gemm.attribute ?? []).every(
      (a) => !['alpha', 'beta'].includes(a.name ?? '') || (a as { f?: number }).f === 1,
    );
    const bias = gemm.input[2]!;
    const readers = this.nodes.filter((n) => n.input.includes(bias) || n.input.includes(value));
    const index = this.initializers.findIndex((t) => t.name === bias);
    const stored = this.initializers[index];
    if (!plain || readers.length !== 1 || readers[0] !== gemm || stored === undefined) return undefined;
    if (this.outputs.some((o) => o.name === value || o.name === bias)) return undefined;
    if (stored.data_type !== onnxDataType('float32') || elementCount((stored.dims ?? []).map(Number)) !== row.length)
      return undefined;
    const raw = stored.raw_data!;
    const current = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const sum = Float32Array.from(current, (b, i) => b + row[i]!);
    const proto = encodeTensor({ dtype: 'float32', dims: (stored.dims ?? []).map(Number), data: sum }, bias);
    this.initializers[index] = proto;
    this.shared.initializerBytes.set(bias, tensorBytes(proto));
    return value;
  }

  /** Same as `node(...)[0]`, for single-output ops. */
  op(
    opType: string,
    inputs: string[],
    attrs?: Record<string, AttrValue | undefined>,
    opts: { name?: string; domain?: string } = {},
  ): string {
    return this.node(opType, inputs, attrs, { ...opts, outputs: 1 })[0]!;
  }

  /** A fresh unique value name: `<scope>/<prefix>_<n>`. */
  fresh(prefix: string): string {
    const base = this.scoped(prefix);
    let n = this.shared.counters.get(base) ?? 0;
    let name = `${base}_${n}`;
    while (this.shared.values.has(name) || this.shared.issued.has(name) || this.shared.nodeNames.has(name)) {
      n += 1;
      name = `${base}_${n}`;
    }
    this.shared.counters.set(base, n + 1);
    this.shared.issued.add(name);
    return name;
  }

  /** Runs `fn` with `prefix/` added to every name it creates (scopes nest: `encoder/layer0/...`). */
  scope<T>(prefix: string, fn: () => T): T {
    if (prefix === '' || prefix.includes('/')) throw new Error(`invalid scope '${prefix}': one non-empty path segment`);
    this.scopePath.push(prefix);
    try {
      return fn();
    } finally {
      this.scopePath.pop();
    }
  }

  // ---- opset-aware helpers -------------------------------------------------

  /**
   * A Reduce* op over `axes` (all axes when omitted or empty). Axes are an
   * input from opset 18 (ReduceSum: from 13), an attribute before.
   */
  reduce(op: string, x: string, axes?: number[], keepdims: boolean | number = true): string {
    if (!op.startsWith('Reduce')) throw new Error(`reduce: '${op}' is not a Reduce* op`);
    const keep = keepdims ? 1 : 0;
    const axesAsInput = op === 'ReduceSum' ? this.opset >= 13 : this.opset >= 18;
    if (axes === undefined || axes.length === 0) return this.op(op, [x], { keepdims: keep });
    if (axesAsInput) return this.op(op, [x, this.constInt64(axes, [axes.length], 'axes')], { keepdims: keep });
    return this.op(op, [x], { axes, keepdims: keep });
  }

  /** Splits `x` along `axis` into pieces of `sizes`; `split` is an input from opset 13, an attribute before. */
  split(x: string, axis: number, sizes: number[]): string[] {
    if (sizes.length === 0) throw new Error('split: sizes must not be empty');
    if (this.opset >= 13) {
      return this.node(
        'Split',
        [x, this.constInt64(sizes, [sizes.length], 'split')],
        { axis },
        { outputs: sizes.length },
      );
    }
    return this.node('Split', [x], { axis, split: sizes }, { outputs: sizes.length });
  }

  /**
   * Slice. `starts`/`ends`/`axes`/`steps` are constant lists or names of 1-D
   * int64 values (for dynamic slices). Ends past the dim are clamped by ONNX,
   * so `Number.MAX_SAFE_INTEGER` means "to the end". Inputs from opset 10.
   */
  slice(
    x: string,
    starts: number[] | string,
    ends: number[] | string,
    axes?: number[] | string,
    steps?: number[] | string,
  ): string {
    if (this.opset >= 10) {
      const list = (v: number[] | string, hint: string): string =>
        typeof v === 'string' ? v : this.constInt64(v, [v.length], hint);
      const inputs = [x, list(starts, 'starts'), list(ends, 'ends')];
      if (axes !== undefined || steps !== undefined) inputs.push(axes === undefined ? '' : list(axes, 'axes'));
      if (steps !== undefined) inputs.push(list(steps, 'steps'));
      return this.op('Slice', inputs);
    }
    if ([starts, ends, axes].some((v) => typeof v === 'string') || steps !== undefined) {
      throw new Error(`slice: dynamic bounds and steps need opset >= 10 (graph has ${this.opset})`);
    }
    return this.op('Slice', [x], {
      starts: starts as number[],
      ends: ends as number[],
      axes: axes as number[] | undefined,
    });
  }

  /** Inserts size-1 dims at `axes`; axes are an input from opset 13. */
  unsqueeze(x: string, axes: number[]): string {
    if (this.opset >= 13) return this.op('Unsqueeze', [x, this.constInt64(axes, [axes.length], 'axes')]);
    return this.op('Unsqueeze', [x], { axes });
  }

  /** Removes size-1 dims at `axes` (all size-1 dims when omitted); axes are an input from opset 13. */
  squeeze(x: string, axes?: number[]): string {
    if (axes === undefined || axes.length === 0) return this.op('Squeeze', [x]);
    if (this.opset >= 13) return this.op('Squeeze', [x, this.constInt64(axes, [axes.length], 'axes')]);
    return this.op('Squeeze', [x], { axes });
  }

  /** Cast to `dtype`. */
  cast(x: string, dtype: DType): string {
    return this.op('Cast', [x], { to: onnxDataType(dtype) });
  }

  // ---- output ----------------------------------------------------------------

  /** This graph as a GraphProto object (used for subgraph attributes and by toBytes). */
  toGraphProto(): GraphProtoObject {
    return {
      name: this.name,
      node: this.nodes,
      initializer: this.initializers,
      input: this.inputs,
      output: this.outputs,
      ...(this.docString === undefined ? {} : { doc_string: this.docString }),
    };
  }

  /** Serialises a ModelProto (ir_version 8, opset imports, producer 'frost'). */
  toBytes(opts: { docString?: string; metadata?: Record<string, string> } = {}): Uint8Array {
    if (this.outputs.length === 0) throw new Error(`graph '${this.name}' has no outputs`);
    const opsetImport = [{ domain: '', version: this.opset }];
    for (const [domain, version] of this.shared.domains) opsetImport.push({ domain, version });
    return encodeModel({
      ir_version: IR_VERSION,
      opset_import: opsetImport,
      producer_name: 'frost',
      ...(this.producerVersion === undefined ? {} : { producer_version: this.producerVersion }),
      ...(opts.docString === undefined ? {} : { doc_string: opts.docString }),
      graph: this.toGraphProto(),
      ...(opts.metadata === undefined
        ? {}
        : { metadata_props: Object.entries(opts.metadata).map(([key, value]) => ({ key, value })) }),
    });
  }

  /**
   * Bytes of initializer payloads grouped by the first path segment of their
   * names ('encoder', 'decoder', 'head', ...), subgraphs' included. A name
   * without '/' is its own group.
   */
  initializerBytesByScope(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, bytes] of this.shared.initializerBytes) {
      const group = name.split('/')[0]!;
      out[group] = (out[group] ?? 0) + bytes;
    }
    return out;
  }

  // ---- internals -------------------------------------------------------------

  /** Validates and appends a node whose names are final; returns its outputs. */
  private emit(
    opType: string,
    inputs: string[],
    attrs: Record<string, AttrValue | undefined>,
    nodeName: string,
    outputs: string[],
    domain: string,
  ): string[] {
    for (const input of inputs) {
      if (typeof input !== 'string') throw new Error(`${opType}: input ${String(input)} is not a value name`);
      if (input !== '' && !this.isVisible(input)) throw new Error(`${opType}: unknown input '${input}'`);
    }
    if (this.shared.nodeNames.has(nodeName)) throw new Error(`duplicate node name '${nodeName}'`);
    // Encode attributes before defining outputs, so that a bad attribute leaves the graph unchanged.
    const attribute = Object.entries(attrs)
      .filter((entry): entry is [string, AttrValue] => entry[1] !== undefined)
      .map(([key, value]) => encodeAttribute(key, value));
    const seen = new Set<string>();
    for (const o of outputs) {
      if (o === '') continue;
      if (seen.has(o) || this.shared.values.has(o)) throw new Error(`${opType}: duplicate value name '${o}'`);
      seen.add(o);
    }
    for (const o of outputs) if (o !== '') this.define(o);
    this.shared.nodeNames.add(nodeName);
    if (domain !== '' && !this.shared.domains.has(domain)) this.shared.domains.set(domain, 1);
    this.nodes.push({
      input: [...inputs],
      output: outputs,
      name: nodeName,
      op_type: opType,
      ...(domain === '' ? {} : { domain }),
      attribute,
    });
    return outputs;
  }

  private prefix(): string {
    return this.scopePath.length === 0 ? '' : `${this.scopePath.join('/')}/`;
  }

  private scoped(name: string): string {
    if (name === '') throw new Error('names must not be empty');
    const prefix = this.prefix();
    return name.startsWith(prefix) ? name : prefix + name;
  }

  private define(name: string): void {
    if (name === '') throw new Error('value names must not be empty');
    if (this.shared.values.has(name)) throw new Error(`duplicate value name '${name}'`);
    this.shared.values.add(name);
    this.locals.add(name);
  }

  private isVisible(name: string): boolean {
    return this.locals.has(name) || (this.parent?.isVisible(name) ?? false);
  }
}
