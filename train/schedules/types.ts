import type { OptionsSchema } from '../../core/options.ts';

/**
 * A learning-rate schedule (one file each in train/schedules/): the rate of every update, and what
 * an epoch's validation score does to it. Its `state` is plain JSON, saved with every checkpoint
 * and handed back on resume, so an interrupted run continues on the same rates.
 */
export interface LrSchedule {
  /** Everything the schedule remembers between sessions (JSON). */
  state: ScheduleState;
  /**
   * The learning rate of update `step` (1-based), given the rate in use now and the training time the run has
   * used so far (over every session, validation excluded, as `--max-minutes` counts it).
   */
  rateAt(step: number, current: number, elapsedMs: number): number;
  /** After an epoch's validation: whether it is the best yet, the rate from now on, whether to stop. */
  observe(score: number, epoch: number, current: number): ScheduleVerdict;
}

export interface ScheduleVerdict {
  improved: boolean;
  learningRate: number;
  stop: boolean;
  /** A line for the log when the schedule changed the rate. */
  note?: string;
}

/** The validation tracker's state, which every schedule's state includes (and may add to). */
export interface ScheduleState {
  best: number;
  bestEpoch: number;
  sinceBest: number;
  [key: string]: unknown;
}

/** What every schedule is built with. */
export interface ScheduleContext {
  /** The configured learning rate (`--lr`): the initial rate, or a warm-up's peak. */
  learningRate: number;
  /** Stop after this many epochs without a validation gain (fairseq's --patience). */
  stopAfter: number;
  /** The run's update budget (`--max-updates`), where it has one: where a fixed-budget schedule ends. */
  maxUpdates?: number;
  /** The run's time budget (`--max-minutes`), where it has one: where a fixed-budget schedule ends without one. */
  maxMinutes?: number;
}

export interface ScheduleDefinition<Options extends object = object> {
  name: string;
  /** One line for `frost train --help`. */
  summary: string;
  /** The schedule's options with types and defaults (run config `schedule`, besides name and stopAfter). */
  options: OptionsSchema<Options>;
  create(options: Options, ctx: ScheduleContext): LrSchedule;
  /** The schedule with these options in words, for reports ('learning rate ×0.8 after every 8 epochs ...'). */
  describe?(options: Options): string;
}

/** Best validation score so far, and the stop after `stopAfter` epochs without a gain; every schedule has one. */
export class ValidationTracker {
  constructor(
    readonly stopAfter: number,
    readonly state: ScheduleState,
  ) {}

  static initialState(): ScheduleState {
    return { best: -Infinity, bestEpoch: -1, sinceBest: 0 };
  }

  /** Records a score; says whether it is the best yet and whether training should stop. */
  observe(score: number, epoch: number): { improved: boolean; stop: boolean } {
    const s = this.state;
    if (score > s.best) {
      s.best = score;
      s.bestEpoch = epoch;
      s.sinceBest = 0;
      return { improved: true, stop: false };
    }
    s.sinceBest += 1;
    return { improved: false, stop: s.sinceBest >= this.stopAfter };
  }
}

/**
 * A schedule whose rate is a function of the update number (warm-up and decay schedules), or of the training time
 * used for a time budget: validation only decides the best checkpoint and the early stop, so a resumed run continues
 * on the same rates.
 */
export function stepSchedule(
  stopAfter: number,
  rateAt: (step: number, current: number, elapsedMs: number) => number,
): LrSchedule {
  const tracker = new ValidationTracker(stopAfter, ValidationTracker.initialState());
  return {
    get state(): ScheduleState {
      return tracker.state;
    },
    set state(s: ScheduleState) {
      Object.assign(tracker.state, s);
    },
    rateAt,
    observe(score, epoch, current) {
      return { ...tracker.observe(score, epoch), learningRate: current };
    },
  };
}

/** The rate after `n` of `steps` warm-up updates, rising linearly from `initial` to `peak` (fairseq's warm-up). */
export function linearWarmupRate(n: number, peak: number, steps: number, initial: number): number {
  return initial + (n * (peak - initial)) / steps;
}
