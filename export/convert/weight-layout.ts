/**
 * Re-layouts of weight arrays, done once at conversion time so the graph
 * stores weights in the layout each ONNX op wants (no Transpose at run time).
 */

/** A float32 array with its shape. */
export interface Array32 {
  shape: number[];
  data: Float32Array;
}

function strides(shape: number[]): number[] {
  const out = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) out[i] = out[i + 1]! * shape[i + 1]!;
  return out;
}

/** `x` with its axes permuted: output axis i is input axis `perm[i]` (numpy.transpose). */
export function transpose(x: Array32, perm: number[]): Array32 {
  if (perm.length !== x.shape.length) throw new Error(`transpose: perm [${perm}] for shape [${x.shape}]`);
  const shape = perm.map((p) => x.shape[p]!);
  const inStrides = strides(x.shape);
  const outStrides = strides(shape);
  const data = new Float32Array(x.data.length);
  const index = new Array<number>(shape.length).fill(0);
  for (let o = 0; o < data.length; o++) {
    let rest = o;
    let src = 0;
    for (let a = 0; a < shape.length; a++) {
      index[a] = Math.floor(rest / outStrides[a]!);
      rest -= index[a]! * outStrides[a]!;
      src += index[a]! * inStrides[perm[a]!]!;
    }
    data[o] = x.data[src]!;
  }
  return { shape, data };
}

/**
 * Reorders equal blocks ("gates") along the last axis: output block i is
 * input block `order[i]`. E.g. a tfjs LSTM kernel [in, 4H] with gate blocks
 * i,f,c,o becomes i,o,f,c with `order = [0, 3, 1, 2]`.
 */
export function reorderBlocks(x: Array32, order: number[]): Array32 {
  const last = x.shape[x.shape.length - 1]!;
  if (last % order.length !== 0) throw new Error(`reorderBlocks: last dim ${last} is not ${order.length} blocks`);
  const block = last / order.length;
  const rows = x.data.length / last;
  const data = new Float32Array(x.data.length);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < order.length; b++) {
      const src = r * last + order[b]! * block;
      data.set(x.data.subarray(src, src + block), r * last + b * block);
    }
  }
  return { shape: [...x.shape], data };
}

/** Concatenates arrays along a new leading axis ([a, b] of shape S → shape [2, ...S]). */
export function stack(xs: Array32[]): Array32 {
  const shape = xs[0]!.shape;
  const data = new Float32Array(xs.length * xs[0]!.data.length);
  xs.forEach((x, i) => {
    if (x.shape.join() !== shape.join()) throw new Error(`stack: shapes [${x.shape}] and [${shape}] differ`);
    data.set(x.data, i * x.data.length);
  });
  return { shape: [xs.length, ...shape], data };
}

/** Concatenates 1-D arrays. */
export function concat1d(xs: Float32Array[]): Float32Array {
  const out = new Float32Array(xs.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of xs) {
    out.set(x, at);
    at += x.length;
  }
  return out;
}
