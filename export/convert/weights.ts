/**
 * Weights of a LayersModel: decoding the concatenated weight data (with
 * tfjs' quantised encodings) and finding a layer's weights by name.
 */
import { float16BitsToFloat32 } from '../../core/onnx/float16.ts';
import type { WeightSpec } from './model-json.ts';

/** A decoded weight: float32 data in row-major order. */
export interface Weight {
  name: string;
  shape: number[];
  data: Float32Array;
}

const product = (dims: number[]): number => dims.reduce((a, b) => a * b, 1);

/** Bytes one element of `spec` takes in the weight data. */
function storedBytes(spec: WeightSpec): number {
  const q = spec.quantization;
  if (q !== undefined) return q.dtype === 'uint8' ? 1 : 2;
  if (spec.dtype === 'float32' || spec.dtype === 'int32') return 4;
  if (spec.dtype === 'bool') return 1;
  throw new Error(`weight '${spec.name}': dtype ${spec.dtype} is not supported`);
}

/**
 * Decodes every weight of a manifest into float32. Quantised weights are
 * expanded as tfjs does on load: `q * scale + min` for uint8/uint16, IEEE
 * half for float16.
 */
export function decodeWeights(specs: WeightSpec[], data: ArrayBuffer | Uint8Array): Map<string, Weight> {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Map<string, Weight>();
  let offset = 0;
  for (const spec of specs) {
    const n = product(spec.shape);
    const size = n * storedBytes(spec);
    if (offset + size > bytes.byteLength) {
      throw new Error(
        `weight '${spec.name}' needs bytes ${offset}..${offset + size}, but the weight data has ${bytes.byteLength}`,
      );
    }
    const values = new Float32Array(n);
    const q = spec.quantization;
    for (let i = 0; i < n; i++) {
      if (q?.dtype === 'uint8') values[i] = view.getUint8(offset + i) * q.scale! + q.min!;
      else if (q?.dtype === 'uint16') values[i] = view.getUint16(offset + 2 * i, true) * q.scale! + q.min!;
      else if (q?.dtype === 'float16') values[i] = float16BitsToFloat32(view.getUint16(offset + 2 * i, true));
      else if (spec.dtype === 'int32') values[i] = view.getInt32(offset + 4 * i, true);
      else if (spec.dtype === 'bool') values[i] = view.getUint8(offset + i);
      else values[i] = view.getFloat32(offset + 4 * i, true);
    }
    offset += size;
    out.set(spec.name, { name: spec.name, shape: [...spec.shape], data: values });
  }
  return out;
}

/** The last path segment of a weight name, without TF's `:0` suffix ('dense/kernel:0' → 'kernel'). */
function baseName(name: string): string {
  return name.replace(/:\d+$/, '').split('/').pop()!;
}

/**
 * The weights of one layer. tfjs names them `<layer>/<weight>`; Keras models
 * converted from Python may add a cell segment (`lstm/lstm_cell/kernel`), and
 * Bidirectional puts each direction under `<layer>/forward_<inner>/` and
 * `<layer>/backward_<inner>/`. So a weight is found by prefix and last segment.
 */
export class LayerWeights {
  constructor(
    private readonly all: Map<string, Weight>,
    /** Name prefixes (with trailing '/') that belong to this layer. */
    readonly prefixes: string[],
  ) {}

  /** These weights narrowed to a sub-folder, e.g. `forward_lstm/` of a Bidirectional layer. */
  under(segmentPrefix: string): LayerWeights {
    const prefixes: string[] = [];
    for (const p of this.prefixes) {
      for (const name of this.all.keys()) {
        if (!name.startsWith(p)) continue;
        const segment = name.slice(p.length).split('/')[0]!;
        const prefix = `${p}${segment}/`;
        if (segment.startsWith(segmentPrefix) && !prefixes.includes(prefix)) prefixes.push(prefix);
      }
    }
    return new LayerWeights(this.all, prefixes);
  }

  private matches(base: string): Weight[] {
    const found: Weight[] = [];
    for (const [name, w] of this.all) {
      if (this.prefixes.some((p) => name.startsWith(p)) && baseName(name) === base) found.push(w);
    }
    return found;
  }

  has(base: string): boolean {
    return this.matches(base).length > 0;
  }

  /** The weight whose last name segment is `base` (e.g. 'kernel'); throws when there is none or more than one. */
  get(base: string, shape?: number[]): Weight {
    const found = this.matches(base);
    if (found.length !== 1) {
      const mine = [...this.all.keys()].filter((n) => this.prefixes.some((p) => n.startsWith(p)));
      const what = found.length === 0 ? 'no' : `${found.length}`;
      throw new Error(
        `${what} weight '${base}' under ${this.prefixes.join(', ') || '(nothing)'} (has: ${mine.join(', ') || 'none'})`,
      );
    }
    const w = found[0]!;
    if (shape !== undefined && (shape.length !== w.shape.length || shape.some((d, i) => d !== w.shape[i]))) {
      throw new Error(`weight '${w.name}' has shape [${w.shape.join(', ')}], expected [${shape.join(', ')}]`);
    }
    return w;
  }
}
