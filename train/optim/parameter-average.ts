import * as tf from '@tensorflow/tfjs-core';
import { runFused } from '../../models/layers/fused.ts';
import { restoreVariable, variableTensors, type CheckpointTensor } from '../checkpoint.ts';

/** Where a checkpoint keeps the average of parameter `name`: `ema/<name>`. */
export const AVERAGE_PREFIX = 'ema/';

/**
 * One update of a parameter's moving average, as a kernel contract (frost registers it for wasm:
 * train/backend/kernels/moving-average.ts, one pass instead of three kernels of a pass each):
 *
 *   FrostMovingAverage  inputs average, param (same shape); attrs decay
 *                       outputs average' = decay · average + (1 − decay) · param
 */
export const MOVING_AVERAGE_KERNEL = 'FrostMovingAverage';

export interface MovingAverageAttrs {
  decay: number;
}

/** FrostMovingAverage as tfjs ops. */
export function movingAverageOps(average: tf.Tensor, param: tf.Tensor, { decay }: MovingAverageAttrs): tf.Tensor {
  return tf.add(tf.mul(average, decay), tf.mul(param, 1 - decay));
}

/**
 * An exponential moving average of the learnable parameters (fairseq's `--ema-decay`; OpenNMT-py's
 * `-average_decay` is 1 − this decay): after update t, shadow ← d·shadow + (1 − d)·p with
 * d = min(decay, (1 + t) / (10 + t)), TensorFlow's `ExponentialMovingAverage(num_updates)` warm-up (and
 * OpenNMT's), so the first updates' average is not the random initialisation. Until the warm-up reaches
 * `decay` the average weighs update k by about k⁸, a window of the last ~t/9 updates. At a constant, high
 * learning rate the weights jitter around a minimum; their average sits nearer it. Validation, the `best`
 * checkpoint and export use the average; training goes on from the raw weights.
 */
export class ParameterAverage {
  readonly shadow = new Map<string, tf.Variable>();

  constructor(
    private readonly vars: Map<string, tf.Variable>,
    readonly decay: number,
  ) {
    if (!(decay > 0 && decay < 1)) throw new RangeError(`the averaging decay must be in (0, 1), got ${decay}`);
    for (const [name, x] of vars)
      this.shadow.set(
        name,
        tf.tidy(() => tf.variable(tf.clone(x), false)),
      );
  }

  /** The decay after update `step` (1-based), warm-up included. */
  decayAt(step: number): number {
    return Math.min(this.decay, (1 + step) / (10 + step));
  }

  /** Folds the parameters after update `step` into the average. */
  update(step: number): void {
    const attrs: MovingAverageAttrs = { decay: this.decayAt(step) };
    tf.tidy(() => {
      for (const [name, s] of this.shadow) {
        const param = this.vars.get(name)!;
        const [next] = runFused(
          MOVING_AVERAGE_KERNEL,
          { average: s, param },
          () => [movingAverageOps(s, param, attrs)],
          {
            ...attrs,
          },
        );
        s.assign(next!);
      }
    });
  }

  /** Runs `fn` with the averaged weights in the parameters, and the raw ones back after it, whatever it does. */
  async applied<T>(fn: () => Promise<T> | T): Promise<T> {
    // Swapping tensors, not copying data: a variable's assign takes the other tensor's buffer by reference.
    const raw = new Map([...this.vars].map(([name, v]) => [name, tf.clone(v)]));
    for (const [name, v] of this.vars) v.assign(this.shadow.get(name)!);
    try {
      return await fn();
    } finally {
      for (const [name, v] of this.vars) {
        v.assign(raw.get(name)!);
        raw.get(name)!.dispose();
      }
    }
  }

  /** The average as checkpoint tensors (`ema/<name>`). */
  collect(): CheckpointTensor[] {
    return variableTensors(this.shadow, AVERAGE_PREFIX);
  }

  /**
   * Takes the average back from a checkpoint saved by a run that averages.
   * @throws Error naming `where` when a tensor is missing (a checkpoint saved without --ema-decay) or misshapen
   */
  restore(tensors: ReadonlyMap<string, { shape: number[]; data: Float32Array }>, where: string): void {
    if (![...tensors.keys()].some((name) => name.startsWith(AVERAGE_PREFIX)))
      throw new Error(`checkpoint in ${where} has no average (${AVERAGE_PREFIX}*): it was saved without --ema-decay`);
    for (const [name, s] of this.shadow) restoreVariable(s, tensors, AVERAGE_PREFIX + name, where);
  }

  dispose(): void {
    for (const s of this.shadow.values()) s.dispose();
  }
}

/**
 * The parameters to decode with: a checkpoint's averaged weights under their own names where it has them
 * (a run trained with `--ema-decay`), else its raw ones. Adam's moments and the raw weights an average
 * replaces are left out.
 */
export function inferenceTensors<T>(tensors: ReadonlyMap<string, T>): Map<string, T> {
  const out = new Map<string, T>();
  for (const [name, t] of tensors) {
    if (name.startsWith(AVERAGE_PREFIX)) out.set(name.slice(AVERAGE_PREFIX.length), t);
    else if (!name.startsWith('adam.') && !tensors.has(AVERAGE_PREFIX + name)) out.set(name, t);
  }
  return out;
}
