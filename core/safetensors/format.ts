/**
 * The safetensors format (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of
 * JSON naming each tensor's dtype, shape and byte range, then the tensors' raw little-endian bytes. An
 * imported file comes from a stranger, so every claim of the header is checked against the bytes before
 * anything is decoded: the header length against a bound and the file's size, each range against the
 * tensor's shape and dtype, the ranges against each other (they must tile the data exactly, as the
 * reference implementation requires, so no byte is read twice or hidden between tensors).
 *
 * Isomorphic: no Node APIs (the file reader with its size checks is node-file.ts).
 */
import { float16BitsToFloat32 } from '../onnx/float16.ts';

/** The dtypes frost reads: every released Marian and fairseq checkpoint is one of these. */
export const SAFETENSORS_DTYPES = ['F32', 'F16', 'BF16'] as const;
export type SafetensorsDtype = (typeof SAFETENSORS_DTYPES)[number];

const BYTES: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

/**
 * The reference implementation's own bound (safetensors' MAX_HEADER_SIZE, 100 MB): a header that claims
 * more is refused before a byte of it is read, whatever the file's size.
 */
export const MAX_HEADER_BYTES = 100_000_000;

/** A file that is not a safetensors file frost can read; the message starts with its label (a path). */
export class SafetensorsError extends Error {
  constructor(label: string, reason: string, options?: ErrorOptions) {
    super(`${label}: ${reason}`, options);
    this.name = 'SafetensorsError';
  }
}

/** One tensor's header entry, checked. `begin`/`end` are byte offsets into the data after the header. */
export interface SafetensorsEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: readonly number[];
  begin: number;
  end: number;
}

/** A parsed header: where each tensor lies, and the free-form `__metadata__` strings. */
export interface SafetensorsHeader {
  /** Bytes before the data: 8 + the header's length. */
  dataStart: number;
  entries: ReadonlyMap<string, SafetensorsEntry>;
  metadata: Readonly<Record<string, string>>;
}

export const elementCount = (shape: readonly number[]) => shape.reduce((n, d) => n * d, 1);

/**
 * The header length from a file's first 8 bytes, refused when it exceeds `MAX_HEADER_BYTES` or what the
 * file can hold (`fileSize`): a 2 GB claim is refused before any allocation.
 */
export function headerLength(first8: Uint8Array, fileSize: number, label: string): number {
  if (fileSize < 8 || first8.length < 8)
    throw new SafetensorsError(label, `${fileSize} bytes: too short for a safetensors file (8-byte header length)`);
  const view = new DataView(first8.buffer, first8.byteOffset, 8);
  const n = view.getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES))
    throw new SafetensorsError(label, `header length ${n} exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  const length = Number(n);
  if (8 + length > fileSize)
    throw new SafetensorsError(label, `header length ${length} claims more than the file's ${fileSize} bytes`);
  return length;
}

function isDtype(value: unknown): value is SafetensorsDtype {
  return typeof value === 'string' && (SAFETENSORS_DTYPES as readonly string[]).includes(value);
}

/**
 * Checks the JSON header (`headerBytes`, without the 8-byte length) against a file of `fileSize` bytes.
 * Every refusal names the tensor and what is wrong with it.
 */
export function parseHeader(headerBytes: Uint8Array, fileSize: number, label: string): SafetensorsHeader {
  const dataStart = 8 + headerBytes.length;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (err) {
    throw new SafetensorsError(label, `the header is not UTF-8 JSON (${(err as Error).message})`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new SafetensorsError(label, 'the header is not a JSON object');
  const entries = new Map<string, SafetensorsEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      metadata = checkMetadata(raw, label);
      continue;
    }
    entries.set(name, checkEntry(name, raw, label));
  }
  checkTiling([...entries.values()], fileSize - dataStart, label);
  return { dataStart, entries, metadata };
}

function checkMetadata(raw: unknown, label: string): Record<string, string> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new SafetensorsError(label, '__metadata__ is not an object of strings');
  for (const [k, v] of Object.entries(raw))
    if (typeof v !== 'string') throw new SafetensorsError(label, `__metadata__.${k} is not a string`);
  return raw as Record<string, string>;
}

function checkEntry(name: string, raw: unknown, label: string): SafetensorsEntry {
  const at = `tensor '${name}'`;
  if (raw === null || typeof raw !== 'object') throw new SafetensorsError(label, `${at}: its entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = raw as Record<string, unknown>;
  if (!isDtype(dtype))
    throw new SafetensorsError(
      label,
      `${at}: dtype ${JSON.stringify(dtype)} is not one frost reads (${SAFETENSORS_DTYPES.join(', ')})`,
    );
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
    throw new SafetensorsError(label, `${at}: shape ${JSON.stringify(shape)} is not a list of sizes`);
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
    offsets[0] > offsets[1]
  )
    throw new SafetensorsError(label, `${at}: data_offsets ${JSON.stringify(offsets)} is not a [begin, end] range`);
  const [begin, end] = offsets as [number, number];
  const expected = elementCount(shape as number[]) * BYTES[dtype];
  if (end - begin !== expected)
    throw new SafetensorsError(
      label,
      `${at}: ${dtype} [${shape.join(', ')}] takes ${expected} bytes, its range [${begin}, ${end}) holds ${end - begin}`,
    );
  return { name, dtype, shape: shape as number[], begin, end };
}

/** The ranges, sorted, must start at 0, follow each other with no gap or overlap, and end at the file's end. */
function checkTiling(entries: SafetensorsEntry[], dataBytes: number, label: string): void {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  for (const e of sorted) {
    if (e.end > dataBytes)
      throw new SafetensorsError(
        label,
        `tensor '${e.name}': its range [${e.begin}, ${e.end}) ends past the file's ${dataBytes} data bytes (truncated?)`,
      );
    if (e.begin !== at)
      throw new SafetensorsError(
        label,
        `tensor '${e.name}': its range starts at ${e.begin}, where ${e.begin < at ? 'the previous tensor still runs' : `a gap follows byte ${at}`}`,
      );
    at = e.end;
  }
  if (at !== dataBytes)
    throw new SafetensorsError(label, `${dataBytes - at} bytes after the last tensor belong to no tensor`);
}

const bf16 = new Float32Array(1);
const bf16Bits = new Uint32Array(bf16.buffer);

/** A tensor's bytes (exactly its range) as float32 values: F16 and BF16 widen exactly. */
export function decodeTensor(entry: SafetensorsEntry, bytes: Uint8Array): Float32Array {
  const n = elementCount(entry.shape);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  if (entry.dtype === 'F32') for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  else if (entry.dtype === 'F16')
    for (let i = 0; i < n; i++) out[i] = float16BitsToFloat32(view.getUint16(2 * i, true));
  else
    for (let i = 0; i < n; i++) {
      // bfloat16 is float32's top 16 bits: widening puts them back, exactly.
      bf16Bits[0] = view.getUint16(2 * i, true) * 0x10000;
      out[i] = bf16[0]!;
    }
  return out;
}

/** A tensor to write: float32 values stored as F32. */
export interface TensorToWrite {
  shape: readonly number[];
  data: Float32Array;
}

/**
 * A safetensors file of float32 tensors, in name order (the reference writer's order), its header padded
 * with spaces to a multiple of 8 bytes as the reference writer does.
 */
export function serialiseSafetensors(
  tensors: Readonly<Record<string, TensorToWrite>>,
  metadata: Readonly<Record<string, string>> = {},
): Uint8Array {
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors[name]!;
    if (elementCount(t.shape) !== t.data.length)
      throw new Error(`tensor '${name}': shape [${t.shape.join(', ')}] does not hold ${t.data.length} values`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + 4 * t.data.length] };
    offset += 4 * t.data.length;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded !== json.length) json = new TextEncoder().encode(JSON.stringify(header).padEnd(padded, ' '));
  const out = new Uint8Array(8 + json.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const name of names) {
    const { data } = tensors[name]!;
    for (let i = 0; i < data.length; i++) view.setFloat32(at + 4 * i, data[i]!, true);
    at += 4 * data.length;
  }
  return out;
}
