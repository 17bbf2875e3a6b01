// Importing a schedule's file registers it.
import './plateau.ts';
import './inverse-sqrt.ts';
import './polynomial-decay.ts';

export { createSchedule, getSchedule, resolveScheduleOptions, scheduleNames, type ScheduleConfig } from './registry.ts';
export type { LrSchedule, ScheduleState } from './types.ts';
export { inverseSqrtRate } from './inverse-sqrt.ts';
export { polynomialDecayRate } from './polynomial-decay.ts';
