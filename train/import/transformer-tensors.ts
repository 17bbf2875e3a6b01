/**
 * A Transformer's layer weights from the names Hugging Face's Marian and fairseq both use
 * (`<stack>.layers.N.self_attn.q_proj.weight`, `fc1`, `final_layer_norm`, ...) to frost's
 * (models/archs/transformer-weights.ts): PyTorch's Linear stores W as [out, in], frost as [in, out]; and the shapes
 * those tensors must have, which an importer checks the file against before it reads a tensor.
 */
import type { CheckpointTensor } from '../checkpoint.ts';

export function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

/** An embedding's rows [V, d] in another order: row i of the result is row order[i] of E. */
export function reorderRows(E: Float32Array, d: number, order: Int32Array): Float32Array {
  const out = new Float32Array(order.length * d);
  order.forEach((from, i) => out.set(E.subarray(from * d, (from + 1) * d), i * d));
  return out;
}

/**
 * A Transformer's layers, part by part, each under its PyTorch name (`from`) and frost's: walked once here both to
 * say which tensors a file must hold (ExpectedShapes) and to map them (TensorMapper), so the two cannot disagree.
 */
abstract class TransformerParts {
  abstract attention(from: string, frost: string): void;
  abstract norm(from: string, frost: string): void;
  abstract feedForward(from: string, frost: string): void;

  /**
   * Every encoder and decoder layer: `encoder`/`decoder` are the stacks' prefixes (`model.encoder`, `encoder`).
   * Both conventions name a layer's parts alike; frost's ln1/ln2(/ln3) follow the sublayers' order.
   */
  layers(encoder: string, encoderLayers: number, decoder: string, decoderLayers: number): void {
    for (let l = 0; l < encoderLayers; l++) {
      const [from, frost] = [`${encoder}.layers.${l}`, `encoder/layer${l}`];
      this.attention(`${from}.self_attn`, `${frost}/self`);
      this.norm(`${from}.self_attn_layer_norm`, `${frost}/ln1`);
      this.feedForward(from, `${frost}/ff`);
      this.norm(`${from}.final_layer_norm`, `${frost}/ln2`);
    }
    for (let l = 0; l < decoderLayers; l++) {
      const [from, frost] = [`${decoder}.layers.${l}`, `decoder/layer${l}`];
      this.attention(`${from}.self_attn`, `${frost}/self`);
      this.norm(`${from}.self_attn_layer_norm`, `${frost}/ln1`);
      this.attention(`${from}.encoder_attn`, `${frost}/cross`);
      this.norm(`${from}.encoder_attn_layer_norm`, `${frost}/ln2`);
      this.feedForward(from, `${frost}/ff`);
      this.norm(`${from}.final_layer_norm`, `${frost}/ln3`);
    }
  }
}

/** A tensor a stranger's config implies: its PyTorch name, its shape (or a second layout also accepted) and why. */
export type ExpectTensor = (name: string, shape: number[], from: string, also?: number[]) => void;

/**
 * The PyTorch tensors TensorMapper reads and their shapes, each passed to `add` with the config fields the shape
 * comes from (`sizes.d`, `sizes.ff`: e.g. `d_model 512`), so a refusal names them.
 */
export class ExpectedShapes extends TransformerParts {
  constructor(
    readonly add: ExpectTensor,
    private readonly d: number,
    private readonly ff: number,
    private readonly sizes: { d: string; ff: string },
  ) {
    super();
  }

  /** A Linear `[rows, cols]` (out, in) and its bias [rows]. */
  linear(from: string, rows: number, cols: number, why: string): void {
    this.add(`${from}.weight`, [rows, cols], why);
    this.add(`${from}.bias`, [rows], why);
  }

  norm(from: string): void {
    this.add(`${from}.weight`, [this.d], this.sizes.d);
    this.add(`${from}.bias`, [this.d], this.sizes.d);
  }

  attention(from: string): void {
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj'])
      this.linear(`${from}.${proj}`, this.d, this.d, this.sizes.d);
  }

  feedForward(from: string): void {
    const { d, ff } = this.sizes;
    this.add(`${from}.fc1.weight`, [this.ff, this.d], `${ff}, ${d}`);
    this.add(`${from}.fc1.bias`, [this.ff], ff);
    this.add(`${from}.fc2.weight`, [this.d, this.ff], `${d}, ${ff}`);
    this.add(`${from}.fc2.bias`, [this.d], d);
  }
}

/** Appends frost's tensors to `out`, each read from the stranger's tensors `t` by its PyTorch name. */
export class TensorMapper extends TransformerParts {
  constructor(
    private readonly t: ReadonlyMap<string, Float32Array>,
    readonly out: CheckpointTensor[],
    private readonly d: number,
    private readonly ff: number,
  ) {
    super();
  }

  /** A PyTorch Linear `[rows, cols]` (out, in) as frost's W [cols, rows] and b [rows]. */
  linear(from: string, W: string, b: string, rows: number, cols: number): void {
    this.matrix(`${from}.weight`, W, rows, cols);
    this.out.push({ name: b, shape: [rows], data: this.t.get(`${from}.bias`)! });
  }

  /** A PyTorch weight `[rows, cols]` (out, in) as frost's [cols, rows] (a Linear without bias). */
  matrix(from: string, W: string, rows: number, cols: number): void {
    this.out.push({ name: W, shape: [cols, rows], data: transpose(this.t.get(from)!, rows, cols) });
  }

  /** A tensor as it is, under frost's name and shape (the same values in the same order). */
  copy(from: string, to: string, shape: number[]): void {
    this.out.push({ name: to, shape, data: this.t.get(from)! });
  }

  norm(from: string, frost: string): void {
    this.out.push({ name: `${frost}/gamma`, shape: [this.d], data: this.t.get(`${from}.weight`)! });
    this.out.push({ name: `${frost}/beta`, shape: [this.d], data: this.t.get(`${from}.bias`)! });
  }

  attention(from: string, frost: string): void {
    for (const [proj, x] of [
      ['q_proj', 'q'],
      ['k_proj', 'k'],
      ['v_proj', 'v'],
      ['out_proj', 'o'],
    ] as const)
      this.linear(`${from}.${proj}`, `${frost}/W${x}`, `${frost}/b${x}`, this.d, this.d);
  }

  feedForward(from: string, frost: string): void {
    this.linear(`${from}.fc1`, `${frost}/W1`, `${frost}/b1`, this.ff, this.d);
    this.linear(`${from}.fc2`, `${frost}/W2`, `${frost}/b2`, this.d, this.ff);
  }
}
