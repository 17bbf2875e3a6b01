/**
 * `--precision int8-compute`: the large MatMul/Gemm of a graph run as integer kernels, the way
 * onnxruntime's own dynamic quantiser (onnxruntime.quantization.quantize_dynamic) rewrites them:
 *
 *   A_q, a_scale, a_zero = DynamicQuantizeLinear(A)         activations: uint8, per tensor, per call
 *   Y_i32 = MatMulInteger(A_q, W_q, a_zero[, w_zero])       W_q int8 (or uint8 for in-graph matrices)
 *   Y = Cast(Y_i32, float) * (a_scale * w_scale)            (+ C for a Gemm)
 *
 * onnxruntime-node fuses that chain into its DynamicQuantizeMatMul kernel (U8S8, VNNI where the
 * CPU has it). Which weights:
 * - a float32 initializer read only as the B of MatMul/Gemm nodes is stored int8 with one symmetric
 *   scale per output column (W_q [K, N], w_scale [N]), so the download shrinks as with `int8`;
 * - a B computed from initializers alone (a seeded head's matrix, regenerated at session creation)
 *   is quantised inside the graph with DynamicQuantizeLinear (uint8, per tensor); onnxruntime folds
 *   that at session creation, so the download stays small and steps read a uint8 matrix;
 * - a tied head's shared matrix E [|V|, d], read by the embedding's Gather and as the transposed B of the
 *   head's Gemm, is stored once, int8 with one scale per row (per output column of the Gemm): the Gemm
 *   multiplies Transpose(E_q), which onnxruntime folds at session creation (an int8 [d, |V|] copy in
 *   memory), and the Gather dequantises only the rows it reads. The output layer is the largest product
 *   of a step (for opus-mt-de-en's 58,101 pieces, more than half of its multiply-adds), so it runs as
 *   integers too;
 * - weights read by anything else (an embedding's Gather alone, the encoder's GRU) are left to the
 *   weight-only `int8` pass (export/precision.ts): stored int8, computed in float32.
 * Weights are 7-bit (±63, onnxruntime's `reduce_range`): on x86 CPUs without VNNI, onnxruntime's U8S8
 * kernel multiplies with VPMADDUBSW, whose int16 sums of two uint8 × int8 products saturate beyond
 * ±32767. With ±127 weights a model's output then depended on the CPU serving it: a non-VNNI server and
 * the browser's wasm kernel (exact int32 sums) translated the same file differently. 255 · 63 · 2 =
 * 32130 cannot saturate, so every CPU and the browser compute the same integers; the BLEU check of the
 * export records what the lost bit costs.
 */
import { TensorDataType } from '../core/onnx/proto.ts';
import type { ConvertedWeight } from './precision.ts';
import { quantizeRowsInt8 } from './precision-quantize.ts';

/** The parts of a decoded ModelProto's graph the rewrite reads and writes. */
export interface Tensor {
  name: string;
  dims?: number[];
  data_type: number;
  raw_data?: Uint8Array;
  float_data?: number[];
}

export interface Node {
  input: string[];
  output: string[];
  name: string;
  op_type: string;
  attribute?: unknown[];
}

export interface Graph {
  node?: Node[];
  initializer?: Tensor[];
  input?: Array<{ name: string }>;
}

/** How the caller reads and selects weights (export/precision.ts). */
export interface WeightAccess {
  float32Values(t: Tensor): Float32Array;
  isConvertibleWeight(elemType: number, dims: readonly number[]): boolean;
}

interface Attribute {
  name: string;
  type?: number;
  i?: number;
  f?: number;
}

function attr(node: Node, name: string): Attribute | undefined {
  return (node.attribute as Attribute[] | undefined)?.find((a) => a.name === name);
}

/** A MatMul or a plain Gemm (alpha = beta = 1, A not transposed): what the rewrite handles. */
function isQuantizableMatMul(node: Node): boolean {
  if (node.op_type === 'MatMul') return true;
  if (node.op_type !== 'Gemm') return false;
  const f = (name: string) => attr(node, name)?.f ?? 1;
  return (attr(node, 'transA')?.i ?? 0) === 0 && f('alpha') === 1 && f('beta') === 1;
}

/** Names computed from initializers alone (constant at session creation). */
function constantNames(graph: Graph): Set<string> {
  const known = new Set((graph.initializer ?? []).map((t) => t.name));
  for (const i of graph.input ?? []) known.delete(i.name);
  for (const node of graph.node ?? []) {
    const ins = node.input.filter((x) => x !== '');
    if (ins.length > 0 && !node.op_type.startsWith('Random') && ins.every((x) => known.has(x)))
      node.output.forEach((o) => known.add(o));
  }
  return known;
}

function raw(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
}

/** The largest stored weight magnitude: 7 bits, so no CPU's int16 pair sums saturate (see above). */
export const INT8_COMPUTE_WEIGHT_MAX = 63;

/** Symmetric int8 per output column of a row-major [K, N] matrix: values ≈ q[k, n] · scales[n], |q| ≤ 63. */
export function quantizeColumnsInt8(w: Float32Array, K: number, N: number): { q: Int8Array; scales: Float32Array } {
  const scales = new Float32Array(N);
  for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) scales[n] = Math.max(scales[n]!, Math.abs(w[k * N + n]!));
  for (let n = 0; n < N; n++) scales[n] = scales[n] === 0 ? 1 : Math.fround(scales[n]! / INT8_COMPUTE_WEIGHT_MAX);
  const q = new Int8Array(K * N);
  for (let i = 0; i < q.length; i++)
    q[i] = Math.max(-INT8_COMPUTE_WEIGHT_MAX, Math.min(INT8_COMPUTE_WEIGHT_MAX, Math.round(w[i]! / scales[i % N]!)));
  return { q, scales };
}

/**
 * Rewrites the graph's quantisable MatMul/Gemm nodes in place (see the module doc) and returns the
 * names of the initializers it replaced.
 */
export function quantizeMatMulsInGraph(graph: Graph, weights: WeightAccess, converted: ConvertedWeight[]): Set<string> {
  const { float32Values, isConvertibleWeight } = weights;
  const nodes = graph.node ?? [];
  const inits = new Map((graph.initializer ?? []).map((t) => [t.name, t]));
  const inputs = new Set((graph.input ?? []).map((i) => i.name));
  const constant = constantNames(graph);
  const consumers = new Map<string, Node[]>();
  for (const n of nodes) for (const x of n.input) consumers.set(x, [...(consumers.get(x) ?? []), n]);

  const added: Tensor[] = [];
  const replaced = new Set<string>();
  const stored = new Map<string, { q: string; scale: string }>();
  const out: Node[] = [];
  const node = (op: string, input: string[], output: string[], name: string, attribute: unknown[] = []): Node => ({
    op_type: op,
    input,
    output,
    name,
    attribute,
  });

  /**
   * A tied matrix `w` [V, d] as int8 rows (7-bit, one scale per row, which is one per output column of the Gemm):
   * `${w.name}.int8` [V, d], its scales `.scale` [V] for the Gemm's output columns and `.row_scale` [V, 1] for the
   * gathered rows.
   */
  const storedTied = new Map<string, { q: string; scale: string; rowScale: string }>();
  const storeTied = (w: Tensor) => {
    const have = storedTied.get(w.name);
    if (have) return have;
    const [V, d] = [w.dims![0]!, w.dims![1]!];
    const values = float32Values(w);
    const { q, scales } = quantizeRowsInt8(values, V, d, INT8_COMPUTE_WEIGHT_MAX);
    let maxAbsError = 0;
    for (let i = 0; i < q.length; i++)
      maxAbsError = Math.max(maxAbsError, Math.abs(q[i]! * scales[Math.floor(i / d)]! - values[i]!));
    const names = { q: `${w.name}.int8`, scale: `${w.name}.scale`, rowScale: `${w.name}.row_scale` };
    added.push({ name: names.q, dims: [V, d], data_type: TensorDataType.INT8, raw_data: raw(q) });
    added.push({ name: names.scale, dims: [V], data_type: TensorDataType.FLOAT, raw_data: raw(scales) });
    added.push({ name: names.rowScale, dims: [V, 1], data_type: TensorDataType.FLOAT, raw_data: raw(scales) });
    converted.push({
      name: w.name,
      dims: [V, d],
      bytesBefore: values.length * 4,
      bytesAfter: q.byteLength + 2 * scales.byteLength,
      maxAbsError,
    });
    storedTied.set(w.name, names);
    replaced.add(w.name);
    return names;
  };
  /** Transpose(E_q) for the Gemm, emitted before the first Gemm that reads it. */
  const transposedTied = new Set<string>();
  const tiedB = (w: Tensor) => {
    const names = storeTied(w);
    const bq = `${w.name}.T.int8`;
    if (!transposedTied.has(w.name)) {
      transposedTied.add(w.name);
      out.push(
        node('Transpose', [names.q], [bq], `${w.name}/transpose_int8`, [{ name: 'perm', type: 7, ints: [1, 0] }]),
      );
    }
    return { q: bq, scale: names.scale };
  };

  /** The int8 copy of initializer `w` as the MatMul's [K, N] B (transposed first for transB). */
  const storeWeight = (w: Tensor, transB: boolean) => {
    const key = `${w.name}${transB ? '^T' : ''}`;
    const have = stored.get(key);
    if (have) return have;
    const dims = w.dims!;
    let values = float32Values(w);
    let [K, N] = [dims[0]!, dims[1]!];
    if (transB) {
      const t = new Float32Array(values.length);
      for (let r = 0; r < K; r++) for (let c = 0; c < N; c++) t[c * K + r] = values[r * N + c]!;
      values = t;
      [K, N] = [N, K];
    }
    const { q, scales } = quantizeColumnsInt8(values, K, N);
    let maxAbsError = 0;
    for (let i = 0; i < q.length; i++)
      maxAbsError = Math.max(maxAbsError, Math.abs(q[i]! * scales[i % N]! - values[i]!));
    const names = { q: `${w.name}${transB ? '.T' : ''}.int8`, scale: `${w.name}.scale` };
    added.push({ name: names.q, dims: [K, N], data_type: TensorDataType.INT8, raw_data: raw(q) });
    added.push({ name: names.scale, dims: [N], data_type: TensorDataType.FLOAT, raw_data: raw(scales) });
    converted.push({
      name: w.name,
      dims,
      bytesBefore: values.length * 4,
      bytesAfter: q.byteLength + scales.byteLength,
      maxAbsError,
    });
    stored.set(key, names);
    replaced.add(w.name);
    return names;
  };

  const isTransBGemm = (n: Node) => n.op_type === 'Gemm' && (attr(n, 'transB')?.i ?? 0) === 1;
  /** Initializers read only by Gathers (as their table) and as the transposed B of Gemms, at least one of each. */
  const tied = new Set(
    [...inits.values()]
      .filter((t) => {
        const readers = consumers.get(t.name) ?? [];
        const gathers = readers.filter((c) => c.op_type === 'Gather' && c.input[0] === t.name && c.input[1] !== t.name);
        const gemms = readers.filter(
          (c) => isQuantizableMatMul(c) && isTransBGemm(c) && c.input[1] === t.name && c.input[0] !== t.name,
        );
        return (
          !inputs.has(t.name) &&
          (t.dims?.length ?? 0) === 2 &&
          isConvertibleWeight(t.data_type, t.dims ?? []) &&
          gathers.length > 0 &&
          gemms.length > 0 &&
          gathers.length + gemms.length === readers.length &&
          gathers.every((g) => (attr(g, 'axis')?.i ?? 0) === 0)
        );
      })
      .map((t) => t.name),
  );

  for (const n of nodes) {
    if (n.op_type === 'Gather' && tied.has(n.input[0]!)) {
      // The rows read, dequantised: q[ids] · scale[ids].
      const { q, rowScale } = storeTied(inits.get(n.input[0]!)!);
      const p = n.name || n.output[0]!;
      const ids = n.input[1]!;
      out.push(node('Gather', [q, ids], [`${p}/rows_q`], `${p}/gather_int8`));
      out.push(
        node('Cast', [`${p}/rows_q`], [`${p}/rows`], `${p}/cast`, [{ name: 'to', type: 2, i: TensorDataType.FLOAT }]),
      );
      out.push(node('Gather', [rowScale, ids], [`${p}/row_scales`], `${p}/gather_scales`));
      out.push(node('Mul', [`${p}/rows`, `${p}/row_scales`], [n.output[0]!], `${p}/dequantize`));
      continue;
    }
    const b = n.input[1];
    const init = b === undefined ? undefined : inits.get(b);
    const transB = isTransBGemm(n);
    const tiedProduct = init !== undefined && tied.has(init.name) && isQuantizableMatMul(n);
    const offline =
      init !== undefined &&
      !inputs.has(init.name) &&
      (init.dims?.length ?? 0) === 2 &&
      isConvertibleWeight(init.data_type, init.dims ?? []) &&
      (consumers.get(init.name) ?? []).every(
        (c) => isQuantizableMatMul(c) && c.input[1] === init.name && c.input[0] !== init.name,
      );
    const inGraph = !offline && b !== undefined && init === undefined && constant.has(b) && !constant.has(n.input[0]!);
    if (!isQuantizableMatMul(n) || !(offline || inGraph || tiedProduct)) {
      out.push(n);
      continue;
    }
    const p = n.name || n.output[0]!;
    const [aq, as, az] = [`${p}/a_q`, `${p}/a_scale`, `${p}/a_zero`];
    out.push(node('DynamicQuantizeLinear', [n.input[0]!], [aq, as, az], `${p}/quantize_a`));
    let bq: string;
    let bScale: string;
    let bZero: string | undefined;
    if (tiedProduct) {
      ({ q: bq, scale: bScale } = tiedB(init!));
    } else if (offline) {
      ({ q: bq, scale: bScale } = storeWeight(init!, transB));
    } else {
      let bf = b!;
      if (transB) out.push(node('Transpose', [b!], [(bf = `${p}/b_t`)], `${p}/transpose_b`));
      [bq, bScale, bZero] = [`${p}/b_q`, `${p}/b_scale`, `${p}/b_zero`];
      out.push(node('DynamicQuantizeLinear', [bf], [bq, bScale, bZero], `${p}/quantize_b`));
    }
    out.push(
      node('MatMulInteger', bZero ? [aq, bq, az, bZero] : [aq, bq, az], [`${p}/y_int32`], `${p}/matmul_integer`),
    );
    out.push(
      node('Cast', [`${p}/y_int32`], [`${p}/y_float`], `${p}/cast`, [{ name: 'to', type: 2, i: TensorDataType.FLOAT }]),
    );
    out.push(node('Mul', [as, bScale], [`${p}/scale`], `${p}/scale`));
    const hasBias = n.op_type === 'Gemm' && (n.input[2] ?? '') !== '';
    out.push(node('Mul', [`${p}/y_float`, `${p}/scale`], [hasBias ? `${p}/y_scaled` : n.output[0]!], `${p}/rescale`));
    if (hasBias) out.push(node('Add', [`${p}/y_scaled`, n.input[2]!], [n.output[0]!], `${p}/bias`));
  }
  graph.initializer = [...(graph.initializer ?? []).filter((t) => !replaced.has(t.name)), ...added];
  graph.node = out;
  return replaced;
}
