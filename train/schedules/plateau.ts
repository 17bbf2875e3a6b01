import { z } from 'zod';
import { registerSchedule } from './registry.ts';
import { ValidationTracker, type LrSchedule, type ScheduleState } from './types.ts';

/**
 * The paper's schedule (frost's default): when validation BLEU has not improved for `patience`
 * epochs, multiply the learning rate by `decay`. The rate does not change within an epoch.
 * Its state ({best, bestEpoch, sinceBest, sinceDecay}) is the one checkpoints always held.
 */
const options = z.strictObject({
  patience: z.number().int().positive().default(8),
  decay: z.number().positive().max(1).default(0.8),
});

registerSchedule({
  name: 'plateau',
  summary: 'multiply the rate by decay after patience epochs without a validation gain (the default)',
  options,
  describe: ({ patience, decay }) => `learning rate ×${decay} after every ${patience} epochs without a validation gain`,
  create({ patience, decay }, { stopAfter }): LrSchedule {
    const tracker = new ValidationTracker(stopAfter, { ...ValidationTracker.initialState(), sinceDecay: 0 });
    return {
      get state(): ScheduleState {
        return tracker.state;
      },
      set state(s: ScheduleState) {
        Object.assign(tracker.state, { sinceDecay: 0, ...s });
      },
      rateAt: (_step, current) => current,
      observe(score, epoch, current) {
        const { improved, stop } = tracker.observe(score, epoch);
        const s = tracker.state as ScheduleState & { sinceDecay: number };
        if (improved) {
          s.sinceDecay = 0;
          return { improved, stop, learningRate: current };
        }
        s.sinceDecay += 1;
        if (s.sinceDecay < patience) return { improved, stop, learningRate: current };
        s.sinceDecay = 0;
        const learningRate = current * decay;
        return {
          improved,
          stop,
          learningRate,
          note: `no validation gain for ${patience} epochs: learning rate now ${learningRate.toExponential(3)}`,
        };
      },
    };
  },
});
