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
  if (n < s.warmupSteps) return linearWarmupRate(n, peak, s.warmupSteps, s.warmupInitLr);
  if (n >= s.totalUpdates) return s.endLr;
  return decayedRate(1 - (n - s.warmupSteps) / (s.totalUpdates - s.warmupSteps), peak, s);
}

/** The rate after `n` updates and `elapsedMs` of a `budgetMs` time budget: progress is the share of it used. */
function timedDecayRate(n: number, elapsedMs: number, budgetMs: number, peak: number, s: DecayShape): number {
  if (n < s.warmupSteps) return linearWarmupRate(n, peak, s.warmupSteps, s.warmupInitLr);
  return decayedRate(Math.max(0, 1 - elapsedMs / budgetMs), peak, s);
}

type DecayShape = Omit<PolynomialDecay, 'totalUpdates'>;

function decayedRate(remaining: number, peak: number, s: DecayShape): number {
  return (peak - s.endLr) * remaining ** s.power + s.endLr;
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
        timedDecayRate(step - 1, elapsedMs, budgetMs, learningRate, opts),
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
