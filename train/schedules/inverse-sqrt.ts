import { z } from 'zod';
import { registerSchedule } from './registry.ts';
import { linearWarmupRate, stepSchedule, type LrSchedule } from './types.ts';

/**
 * fairseq's `inverse_sqrt` (the Transformer's): the rate rises linearly from `warmupInitLr` to the
 * configured rate (`--lr`) over `warmupSteps` updates, then decays with the inverse square root of
 * the update number, lr · sqrt(warmupSteps / n). As in fairseq, update k uses the rate set after
 * update k − 1, so the first update runs at `warmupInitLr`. The rate is a function of the step
 * alone, so resuming at step n continues exactly; validation only decides the best checkpoint and
 * the early stop.
 */
const options = z.strictObject({
  warmupSteps: z.number().int().positive().default(4000),
  warmupInitLr: z.number().nonnegative().default(0),
});

/** The rate after `n` updates. */
export function inverseSqrtRate(n: number, peak: number, warmupSteps: number, warmupInitLr: number): number {
  if (n < warmupSteps) return linearWarmupRate(n, peak, warmupSteps, warmupInitLr);
  return peak * Math.sqrt(warmupSteps / n);
}

registerSchedule({
  name: 'inverse-sqrt',
  summary: "linear warm-up to --lr over --warmup-steps updates, then lr·sqrt(warmup/step) (fairseq's inverse_sqrt)",
  options,
  describe: ({ warmupSteps, warmupInitLr }) =>
    `linear warm-up from ${warmupInitLr} over ${warmupSteps} updates, then the rate × sqrt(warm-up / update)`,
  create({ warmupSteps, warmupInitLr }, { learningRate, stopAfter }): LrSchedule {
    return stepSchedule(stopAfter, (step) => inverseSqrtRate(step - 1, learningRate, warmupSteps, warmupInitLr));
  },
});
