import type * as tf from '@tensorflow/tfjs-core';

/**
 * Tensors a gradient function hands to a node visited later in the same backward pass (shared-matmul.ts collects
 * each step's saved input and upstream gradient for one dW at the first step). tfjs keeps every saved tensor and
 * gradient until the walk ends; frost's walk (train/optim/lean-backprop.ts) frees them as each node is done, except
 * those held here, which go with the walk's end as before.
 */
const held = new WeakSet<tf.Tensor>();

export function holdForBackprop(...tensors: tf.Tensor[]): void {
  for (const t of tensors) held.add(t);
}

export function isHeldForBackprop(t: tf.Tensor): boolean {
  return held.has(t);
}
