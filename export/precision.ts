/**
 * Reduced-precision export as one post-pass over a serialized ModelProto: the graph frost built and
 * parity-checked in float32 is decoded, its large float32 initializers are stored smaller, and a
 * node that restores float32 is put in front of each, under the weight's original name. Every
 * consumer (Gather, Gemm, GRU, a tied head reading the embedding) is left untouched and still
 * computes in float32, so the pass knows nothing about architectures or heads.
 *
 * - fp16: `W.fp16` (float16) → Cast(to float) → `W`. Not a true fp16 graph: onnxruntime's CPU
 *   provider would run one, but only by inserting Casts to float32 around every op that lacks an
 *   fp16 kernel (GRU among them; checked with onnxruntime-node 1.30), so it would compute in float32
 *   anyway, while the graphs' interface (state, memory, log-probs) would turn float16 and break
 *   frost's runtime, the browser client and the Triton configs. Same file size, float32 interface.
 * - int8: weight-only quantisation with a symmetric scale per row (rows = all dims but the last):
 *   `W.int8` [rows, cols] + `W.scale` [rows, 1] → Cast(to float) → Mul → (Reshape to W's dims) →
 *   `W`. Embedding tables are dequantised whole (a row is one token's vector, so the per-row scale
 *   is the one a Gather-then-dequantise would use). Why Cast · scale and not DequantizeLinear, which
 *   computes the same (zero point 0): onnxruntime leaves DequantizeLinear out of constant folding
 *   (it keeps it for its QDQ fusions), so every decoder step re-dequantised every weight: 3-4×
 *   slower steps in onnxruntime-node 1.30 (rnn-attn small, 10k vocabulary: 8-9 ms against
 *   2.3-3.1 ms). Cast and Mul of initializers are constant-folded when the session is created, so
 *   steps run at float32 speed.
 *
 * Both shrink the files (download, disk, gzip), not the memory of a running session nor its
 * compute: the restored float32 weights are what onnxruntime keeps after folding.
 *
 * - int8-compute: the large MatMul/Gemm run as integer kernels (DynamicQuantizeLinear +
 *   MatMulInteger, export/precision-int8-compute.ts); the weights nothing but those read are stored
 *   int8 per output column, the rest as `int8` stores them. Same download as `int8`, faster steps
 *   in onnxruntime-node, and in onnxruntime-web's wasm too as measured under Node
 *   (docs/decoding-speed.md); `int8` stays the variant that computes exactly the float32 graph's ops.

 * Only weight matrices are converted ({@link isConvertibleWeight}): embeddings, GRU W/R, attention
 * and output matrices, stored head matrices. Biases, vectors and small constants stay float32: they
 * are a rounding error of the size, and exactness there is free.
 */
import { float16BitsToFloat32, toFloat16Array } from '../core/onnx/float16.ts';
import { decodeModel, encodeModel, TensorDataType, type ModelProtoObject } from '../core/onnx/proto.ts';
import { quantizeMatMulsInGraph, type Graph, type Node, type Tensor } from './precision-int8-compute.ts';
import { quantizeRowsInt8 } from './precision-quantize.ts';

/** Precisions `frost export --precision` offers (the card's `precision` field). */
export const PRECISIONS = ['fp32', 'fp16', 'int8', 'int8-compute'] as const;
export type Precision = (typeof PRECISIONS)[number];

/** Smaller float32 initializers are kept as they are (see {@link isConvertibleWeight}). */
const MIN_CONVERTED_ELEMENTS = 1024;
/** Both matrix dims must be at least this. */
const MIN_MATRIX_SIDE = 16;

/**
 * Suffixes of the tensors the pass stores in place of a weight `W`. Tools that group initializers
 * by name (the size report) strip them with {@link weightNameOf} to find the weight they belong to.
 */
const STORAGE_SUFFIXES = ['.fp16', '.int8', '.scale', '.shape'] as const;

/** The weight a stored tensor belongs to: `decoder/embedding.int8` → `decoder/embedding`. */
export function weightNameOf(initializer: string): string {
  for (const suffix of STORAGE_SUFFIXES) if (initializer.endsWith(suffix)) return initializer.slice(0, -suffix.length);
  return initializer;
}

/** One converted weight. */
export interface ConvertedWeight {
  name: string;
  dims: number[];
  /** Payload bytes before and after (int8: values and scales together). */
  bytesBefore: number;
  bytesAfter: number;
  /** Largest |restored − original| over the tensor: the rounding the weight went through. */
  maxAbsError: number;
}

/** What {@link convertPrecision} did to one model. */
export interface PrecisionResult {
  bytes: Uint8Array;
  converted: ConvertedWeight[];
}

/** A float32 initializer's values (raw_data, or the float_data field other exporters use). */
function float32Values(t: Tensor): Float32Array {
  if (t.raw_data !== undefined && t.raw_data.length > 0) {
    // Copy: decoded raw_data may sit at an offset that is not 4-byte aligned.
    const copy = new Uint8Array(t.raw_data);
    return new Float32Array(copy.buffer, 0, copy.length / 4);
  }
  return Float32Array.from(t.float_data ?? []);
}

function rawBytes(view: ArrayBufferView): Uint8Array {
  // Typed arrays are little-endian on every platform onnxruntime-node ships for, as ONNX requires.
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();
}

/**
 * True for the weights worth storing smaller: float32 matrices (or stacks of them, like GRU's
 * [directions, 3H, in]) whose last two dims are both at least {@link MIN_MATRIX_SIDE}, with at least
 * {@link MIN_CONVERTED_ELEMENTS} elements. Rank-2 biases such as GRU's B [directions, 6H] and
 * vectors like attention's v [A, 1] are not matrices in that sense and stay float32.
 */
function isConvertibleWeight(elemType: number, dims: readonly number[]): boolean {
  if (elemType !== TensorDataType.FLOAT || dims.length < 2) return false;
  const count = dims.reduce((a, b) => a * b, 1);
  return (
    dims[dims.length - 1]! >= MIN_MATRIX_SIDE &&
    dims[dims.length - 2]! >= MIN_MATRIX_SIDE &&
    count >= MIN_CONVERTED_ELEMENTS
  );
}

function intAttr(name: string, i: number) {
  return { name, type: 2 /* INT */, i };
}

/** Stores `t` as fp16 plus a Cast back to float32 named like `t`. */
function toFp16(t: Tensor, values: Float32Array): { tensors: Tensor[]; nodes: Node[]; info: ConvertedWeight } {
  const bits = toFloat16Array(values);
  let maxAbsError = 0;
  for (let i = 0; i < values.length; i++)
    maxAbsError = Math.max(maxAbsError, Math.abs(float16BitsToFloat32(bits[i]!) - values[i]!));
  if (!Number.isFinite(maxAbsError))
    throw new Error(`weight '${t.name}' holds values beyond fp16's range (±65504); export it as fp32 or int8`);
  const stored = `${t.name}.fp16`;
  return {
    tensors: [{ name: stored, dims: t.dims, data_type: TensorDataType.FLOAT16, raw_data: rawBytes(bits) }],
    nodes: [
      {
        input: [stored],
        output: [t.name],
        name: `${t.name}/restore_fp32`,
        op_type: 'Cast',
        attribute: [intAttr('to', TensorDataType.FLOAT)],
      },
    ],
    info: {
      name: t.name,
      dims: t.dims ?? [],
      bytesBefore: values.length * 4,
      bytesAfter: bits.byteLength,
      maxAbsError,
    },
  };
}

/** Stores `t` as per-row int8 plus Cast · scale (and a Reshape for rank > 2) named like `t`. */
function toInt8(t: Tensor, values: Float32Array): { tensors: Tensor[]; nodes: Node[]; info: ConvertedWeight } {
  const dims = t.dims ?? [];
  const cols = dims[dims.length - 1]!;
  const rows = values.length / cols;
  const { q, scales } = quantizeRowsInt8(values, rows, cols);
  let maxAbsError = 0;
  for (let i = 0; i < values.length; i++)
    maxAbsError = Math.max(maxAbsError, Math.abs(q[i]! * scales[Math.floor(i / cols)]! - values[i]!));
  const [stored, scale, shape] = [`${t.name}.int8`, `${t.name}.scale`, `${t.name}.shape`];
  const tensors: Tensor[] = [
    { name: stored, dims: [rows, cols], data_type: TensorDataType.INT8, raw_data: rawBytes(q) },
    // [rows, 1] so that Mul broadcasts one scale over each row.
    { name: scale, dims: [rows, 1], data_type: TensorDataType.FLOAT, raw_data: rawBytes(scales) },
  ];
  const flat = dims.length === 2 ? t.name : `${t.name}/dequantized`;
  const nodes: Node[] = [
    {
      input: [stored],
      output: [`${t.name}/as_float`],
      name: `${t.name}/as_float`,
      op_type: 'Cast',
      attribute: [intAttr('to', TensorDataType.FLOAT)],
    },
    {
      input: [`${t.name}/as_float`, scale],
      output: [flat],
      name: `${t.name}/dequantize`,
      op_type: 'Mul',
      attribute: [],
    },
  ];
  if (flat !== t.name) {
    tensors.push({
      name: shape,
      dims: [dims.length],
      data_type: TensorDataType.INT64,
      raw_data: rawBytes(BigInt64Array.from(dims, BigInt)),
    });
    nodes.push({
      input: [flat, shape],
      output: [t.name],
      name: `${t.name}/reshape`,
      op_type: 'Reshape',
      attribute: [],
    });
  }
  return {
    tensors,
    nodes,
    info: {
      name: t.name,
      dims,
      bytesBefore: values.length * 4,
      bytesAfter: q.byteLength + scales.byteLength,
      maxAbsError,
    },
  };
}

/** Converts one graph's initializers in place (subgraphs read the restored names from the outer scope). */
function convertGraph(graph: Graph, precision: Exclude<Precision, 'fp32'>, converted: ConvertedWeight[]): void {
  // int8-compute: MatMul/Gemm weights first (precision-int8-compute.ts); what they leave is stored as int8.
  if (precision === 'int8-compute') quantizeMatMulsInGraph(graph, { float32Values, isConvertibleWeight }, converted);
  const keep: Tensor[] = [];
  const added: Tensor[] = [];
  const restore: Node[] = [];
  const listedAsInput = new Set((graph.input ?? []).map((i) => i.name));
  for (const t of graph.initializer ?? []) {
    // An initializer that is also a graph input may be overridden by a feed: leave those alone.
    if (!isConvertibleWeight(t.data_type, t.dims ?? []) || listedAsInput.has(t.name)) {
      keep.push(t);
      continue;
    }
    const values = float32Values(t);
    const out = precision === 'fp16' ? toFp16(t, values) : toInt8(t, values);
    added.push(...out.tensors);
    restore.push(...out.nodes);
    converted.push(out.info);
  }
  graph.initializer = [...keep, ...added];
  // Restoring nodes read only initializers, so putting them first keeps the node list topologically sorted.
  graph.node = [...restore, ...(graph.node ?? [])];
}

/**
 * Returns `bytes` (a float32 model) with its large float32 weights stored as `precision`; see the
 * module doc. `fp32` returns the bytes unchanged.
 * @throws Error for fp16 when a weight holds values beyond fp16's range
 */
export function convertPrecision(bytes: Uint8Array, precision: Precision): PrecisionResult {
  if (precision === 'fp32') return { bytes, converted: [] };
  if (!PRECISIONS.includes(precision))
    throw new Error(`precision must be one of ${PRECISIONS.join(', ')}, got '${String(precision)}'`);
  const model = decodeModel(bytes) as unknown as ModelProtoObject & { graph: Graph };
  const converted: ConvertedWeight[] = [];
  convertGraph(model.graph, precision, converted);
  return { bytes: encodeModel(model), converted };
}
