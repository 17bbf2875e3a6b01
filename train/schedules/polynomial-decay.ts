import { z } from 'zod';
import { registerSchedule } from './registry.ts';
import { linearWarmupRate, stepSchedule, type LrSchedule } from './types.ts';

/**
 * fairseq's `polynomial_decay`, for a run with a fixed budget of updates: an optional linear warm-up
 * from `warmupInitLr` to the configured rate (`--lr`) over `warmupSteps` updates, then a decay to
 * `endLr` at update `totalUpdates` (the run's `--max-updates` when not given), as
 * (lr − endLr)·(1 − progress)^power + endLr. A short budget gains from it: the last updates take small
 * steps, which a constant rate that is still high when the budget ends does not. As in fairseq (and
 * inverse-sqrt), update k runs at the rate set after update k − 1; the rate is a function of the
 * step alone, so a resumed run continues on the same rates.
 */
const options = z.strictObject({
  warmupSteps: z.number().int().nonnegative().default(0),
  warmupInitLr: z.number().nonnegative().default(0),
  totalUpdates: z.number().int().positive().optional(),
  endLr: z.number().nonnegative().default(0),
  power: z.number().positive().default(1),
});

/** The schedule's options with its end resolved (its own totalUpdates, else the run's --max-updates). */
export type PolynomialDecay = z.infer<typeof options> & { totalUpdates: number };

/** The rate after `n` updates, peaking at `peak`. */
export function polynomialDecayRate(n: number, peak: number, s: PolynomialDecay): number {
  if (n < s.warmupSteps) return linearWarmupRate(n, peak, s.warmupSteps, s.warmupInitLr);
  if (n >= s.totalUpdates) return s.endLr;
  const remaining = 1 - (n - s.warmupSteps) / (s.totalUpdates - s.warmupSteps);
  return (peak - s.endLr) * remaining ** s.power + s.endLr;
}

registerSchedule({
  name: 'polynomial-decay',
  summary: "warm-up (default none), then a linear decay to 0 at --max-updates (fairseq's polynomial_decay)",
  options,
  describe: ({ warmupSteps, totalUpdates, endLr, power }) =>
    `${warmupSteps ? `linear warm-up over ${warmupSteps} updates, then ` : ''}` +
    `the rate decays${power === 1 ? ' linearly' : ` with power ${power}`} to ${endLr} at update ${totalUpdates ?? 'max-updates'}`,
  create(opts, { learningRate, stopAfter, maxUpdates }): LrSchedule {
    const totalUpdates = opts.totalUpdates ?? maxUpdates;
    if (totalUpdates === undefined) {
      throw new RangeError(
        "learning-rate schedule 'polynomial-decay' decays to its end at a known update: give --max-updates (or the schedule's totalUpdates)",
      );
    }
    if (totalUpdates <= opts.warmupSteps) {
      throw new RangeError(
        `learning-rate schedule 'polynomial-decay': its ${totalUpdates} updates leave none after the ${opts.warmupSteps} of warm-up`,
      );
    }
    const shape = { ...opts, totalUpdates };
    return stepSchedule(stopAfter, (step) => polynomialDecayRate(step - 1, learningRate, shape));
  },
});
