import { parseOptions } from '../../core/options.ts';
import { Registry } from '../../core/registry.ts';
import type { LrSchedule, ScheduleContext, ScheduleDefinition, ScheduleState } from './types.ts';

const schedules = new Registry<ScheduleDefinition>('learning-rate schedule');

export function registerSchedule<Options extends object>(def: ScheduleDefinition<Options>): void {
  schedules.register(def.name, def as unknown as ScheduleDefinition);
}

export function scheduleNames(): string[] {
  return schedules.names();
}

export function getSchedule(name: string): ScheduleDefinition {
  return schedules.get(name);
}

/** The run config's `schedule` block: a schedule by name, the shared early stop, and that schedule's options. */
export interface ScheduleConfig {
  name: string;
  stopAfter: number;
  [option: string]: unknown;
}

/**
 * A schedule's options with defaults filled in, checked against its schema: an option of another
 * schedule, or a wrong type, is refused in one line (`learning-rate schedule 'plateau': unknown
 * option 'warmupSteps' (options: patience, decay)`).
 */
export function resolveScheduleOptions(name: string, options: Record<string, unknown>): Record<string, unknown> {
  const def = getSchedule(name);
  return { ...parseOptions(def.options, options, `learning-rate schedule '${name}'`) };
}

/** The schedule a run config names, with `state` from a checkpoint when resuming. */
export function createSchedule(
  config: ScheduleConfig,
  ctx: Omit<ScheduleContext, 'stopAfter'>,
  state?: ScheduleState,
): LrSchedule {
  const { name, stopAfter, ...rest } = config;
  const def = getSchedule(name);
  const schedule = def.create(resolveScheduleOptions(name, rest), { ...ctx, stopAfter });
  if (state) schedule.state = { ...schedule.state, ...state };
  return schedule;
}
