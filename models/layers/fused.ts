import * as tf from '@tensorflow/tfjs-core';

/**
 * Fused recurrent ops (the GRU cell in gru.ts, additive attention in attention.ts): one op with
 * its own gradient instead of the ~15 forward and ~30 backward small ops autodiff records per
 * time step. Each is defined by a kernel contract (named inputs → outputs) that a backend may
 * register (frost registers wasm kernels in train/backend/kernels/); on a backend that does not
 * (tfjs-node, cpu) the same contract runs as plain tfjs ops, still under one custom gradient.
 *
 *  - 'auto': the backend's kernel when it registers one, else the tfjs ops;
 *  - 'ops': always the tfjs ops (tests compare the kernels against them);
 *  - 'unfused': the per-op graph plain autodiff records, as before the fused ops (the reference
 *    the tests check the gradients against, and the "before" of side-by-side benchmarks).
 */
export type FusedMode = 'auto' | 'ops' | 'unfused';

let mode: FusedMode = 'auto';

export function fusedMode(): FusedMode {
  return mode;
}

/** Sets the mode for ops built from now on; returns the previous one. */
export function setFusedMode(next: FusedMode): FusedMode {
  const previous = mode;
  mode = next;
  return previous;
}

/**
 * The outputs of kernel `name` from the active backend, or `ops()` when it has none (or the mode
 * says so). The ops run in a tidy: called from a gradient function, their intermediates would
 * otherwise live until backprop ends.
 */
export function runFused(
  name: string,
  inputs: tf.NamedTensorMap,
  ops: () => tf.Tensor[],
  attrs: tf.NamedAttrMap = {},
): tf.Tensor[] {
  if (mode === 'auto' && tf.getKernel(name, tf.getBackend()) != null) {
    return tf.engine().runKernel(name, inputs, attrs) as unknown as tf.Tensor[];
  }
  return tf.tidy(ops);
}
