import * as tf from '@tensorflow/tfjs-core';
import { SeededRandom } from '../core/random.ts';

/** How a parameter is filled when a model is built (a checkpoint may overwrite learnable ones). */
export type Initializer =
  | { kind: 'glorot-uniform' }
  /**
   * He et al. (2015) for ReLU layers: uniform in ±√(6 / fan-in), fan-in = the product of all dims but the last ([kh,
   * kw, in, out] filters, [in, out] matrices).
   */
  | { kind: 'he-uniform' }
  | { kind: 'uniform'; limit: number }
  | { kind: 'zeros' }
  | { kind: 'constant'; value: number };

export interface ParamCounts {
  learnable: number;
  frozen: number;
}

/**
 * Every tensor a model owns, by path-like name ('encoder/fwd/Wx', 'head/W'). Learnable ones are
 * tf.Variables the optimiser sees; frozen ones are plain tensors, so no gradient and no optimiser
 * state is ever made for them.
 */
let nextStoreId = 0;

export class ParamStore {
  readonly learnable = new Map<string, tf.Variable>();
  readonly frozen = new Map<string, tf.Tensor>();
  private readonly aux: tf.Tensor[] = [];
  private readonly rng: SeededRandom;
  /** tfjs variable names are global to the engine; a per-store prefix lets several models coexist. */
  private readonly engineScope = `store${nextStoreId++}`;

  constructor(seed: number) {
    this.rng = new SeededRandom(seed, 'init');
  }

  /** A learnable parameter. Each name draws from its own stream, so adding a parameter never changes the others. */
  variable(name: string, shape: number[], init: Initializer): tf.Variable {
    if (this.learnable.has(name) || this.frozen.has(name)) throw new Error(`parameter '${name}' defined twice`);
    const values = fill(shape, init, this.rng.fork(name));
    const v = tf.variable(tf.tensor(values, shape, 'float32'), true, `${this.engineScope}/${name}`);
    this.learnable.set(name, v);
    return v;
  }

  /** A frozen tensor; the store takes ownership. */
  constant(name: string, tensor: tf.Tensor): tf.Tensor {
    if (this.learnable.has(name) || this.frozen.has(name)) throw new Error(`parameter '${name}' defined twice`);
    tf.keep(tensor);
    this.frozen.set(name, tensor);
    return tensor;
  }

  /**
   * A fixed tensor the model computes with that is no parameter (an output mask): kept and freed with the
   * store, but not counted, saved or exported as one.
   */
  auxiliary(tensor: tf.Tensor): tf.Tensor {
    tf.keep(tensor);
    this.aux.push(tensor);
    return tensor;
  }

  counts(prefix = ''): ParamCounts {
    let learnable = 0;
    let frozen = 0;
    for (const [name, v] of this.learnable) if (name.startsWith(prefix)) learnable += v.size;
    for (const [name, t] of this.frozen) if (name.startsWith(prefix)) frozen += t.size;
    return { learnable, frozen };
  }

  /** Learnable parameter counts by first path segment: encoder, decoder, head. */
  countsByComponent(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, v] of this.learnable) {
      const component = name.split('/')[0];
      out[component] = (out[component] ?? 0) + v.size;
    }
    return out;
  }

  get(name: string): tf.Tensor {
    const t = this.learnable.get(name) ?? this.frozen.get(name);
    if (!t) throw new Error(`no parameter named '${name}'`);
    return t;
  }

  dispose(): void {
    for (const v of this.learnable.values()) v.dispose();
    for (const t of this.frozen.values()) t.dispose();
    for (const t of this.aux) t.dispose();
    this.aux.length = 0;
    this.learnable.clear();
    this.frozen.clear();
  }
}

function fill(shape: number[], init: Initializer, rng: SeededRandom): Float32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  const out = new Float32Array(size);
  switch (init.kind) {
    case 'zeros':
      return out;
    case 'constant':
      return out.fill(init.value);
    case 'uniform':
      for (let i = 0; i < size; i++) out[i] = (2 * rng.next() - 1) * init.limit;
      return out;
    case 'he-uniform': {
      const fanIn = shape.length >= 2 ? size / shape[shape.length - 1] : size;
      const limit = Math.sqrt(6 / fanIn);
      for (let i = 0; i < size; i++) out[i] = (2 * rng.next() - 1) * limit;
      return out;
    }
    case 'glorot-uniform': {
      // For [in, out] matrices; vectors fall back to fan-in = fan-out = size.
      const fanIn = shape.length >= 2 ? shape[shape.length - 2] : size;
      const fanOut = shape.length >= 2 ? shape[shape.length - 1] : size;
      const limit = Math.sqrt(6 / (fanIn + fanOut));
      for (let i = 0; i < size; i++) out[i] = (2 * rng.next() - 1) * limit;
      return out;
    }
  }
}
