import { getSchedule, resolveScheduleOptions, type ScheduleConfig } from '../train/schedules/index.ts';

/**
 * A run's learning-rate schedule and stopping rule in words, from its config (defaults filled in), so a
 * report states the rule its runs converged by. The paper's rule is frost's default for rnn-attn: the
 * `plateau` schedule multiplies the rate by `decay` (0.8) after every `patience` (8) epochs without a
 * validation-BLEU gain, and every schedule stops a run after `stopAfter` (20) epochs without one.
 */
export function describeStoppingRule(schedule: ScheduleConfig): string {
  const { name, stopAfter, ...rest } = schedule;
  const def = getSchedule(name);
  const rate = def.describe?.(resolveScheduleOptions(name, rest)) ?? `${name} schedule`;
  return `${rate}; stop after ${stopAfter} epochs without a validation gain`;
}
