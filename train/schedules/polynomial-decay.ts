import { z } from 'zod';
import { registerSchedule } from './registry.ts';
import { linearWarmupRate, stepSchedule, type LrSchedule } from './types.ts';

/**
 * fairseq's `polynomial_decay`, for a run with a fixed budget: an optional linear warm-up from `warmupInitLr` to
 * the configured rate (`--lr`) over `warmupSteps` updates, then a decay to `endLr` at the budget's end, as
 * (lr − endLr)·(1 − progress)^power + endLr. A short budget gains from it: the last updates take small steps,
 * which a constant rate that is still high when the budget ends does not (Li et al. 2020, "Budgeted Training":
 * a linear decay to the budget's end is the best of the schedules they compare).
 *
 * The budget: update `totalUpdates`, else the run's `--max-updates` (as in fairseq: update k runs at the rate set
 * after update k − 1, a function of the step alone, so a resumed run continues on the same rates); else the run's
 * `--max-minutes`, where progress is the training time used (over every session, as the budget counts it), so a
 * time-budgeted run such as `npm start`'s ends its decay when its time does, on a fast machine or a slow one.
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
  return decayRate(n, peak, s, () => 1 - (n - s.warmupSteps) / (s.totalUpdates - s.warmupSteps));
}

/**
 * The warm-up's rate after `n` updates, then the decay's, where `remaining()` is the share of the budget left (of its
 * updates, or of its time); none left, the end rate.
 */
function decayRate(n: number, peak: number, s: Omit<PolynomialDecay, 'totalUpdates'>, remaining: () => number): number {
  if (n < s.warmupSteps) return linearWarmupRate(n, peak, s.warmupSteps, s.warmupInitLr);
  const left = remaining();
  return left <= 0 ? s.endLr : (peak - s.endLr) * left ** s.power + s.endLr;
}

registerSchedule({
  name: 'polynomial-decay',
  summary:
    "warm-up (default none), then a linear decay to 0 at --max-updates, else over --max-minutes (fairseq's polynomial_decay)",
  options,
  describe: ({ warmupSteps, totalUpdates, endLr, power }) =>
    `${warmupSteps ? `linear warm-up over ${warmupSteps} updates, then ` : ''}` +
    `the rate decays${power === 1 ? ' linearly' : ` with power ${power}`} to ${endLr} at ` +
    `${totalUpdates === undefined ? 'the end of the update or time budget' : `update ${totalUpdates}`}`,
  create(opts, { learningRate, stopAfter, maxUpdates, maxMinutes }): LrSchedule {
    const totalUpdates = opts.totalUpdates ?? maxUpdates;
    if (totalUpdates === undefined) {
      if (maxMinutes === undefined) {
        throw new RangeError(
          "learning-rate schedule 'polynomial-decay' decays to the end of a known budget: give --max-updates or " +
            "--max-minutes (or the schedule's totalUpdates)",
        );
      }
      const budgetMs = maxMinutes * 60_000;
      return stepSchedule(stopAfter, (step, _current, elapsedMs) =>
        decayRate(step - 1, learningRate, opts, () => 1 - elapsedMs / budgetMs),
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
