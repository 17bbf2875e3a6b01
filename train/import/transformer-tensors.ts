/**
 * A Transformer's layer weights from the names Hugging Face's Marian and fairseq both use
 * (`<stack>.layers.N.self_attn.q_proj.weight`, `fc1`, `final_layer_norm`, ...) to frost's
 * (models/archs/transformer-weights.ts): PyTorch's Linear stores W as [out, in], frost as [in, out].
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

/** Appends frost's tensors to `out`, each read from the stranger's tensors `t` by its PyTorch name. */
export class TensorMapper {
  constructor(
    private readonly t: ReadonlyMap<string, Float32Array>,
    readonly out: CheckpointTensor[],
    private readonly d: number,
    private readonly ff: number,
  ) {}

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
