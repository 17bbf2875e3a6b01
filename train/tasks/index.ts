// Importing a task file registers it; this list is the only place that names them all.
import './translation.ts';
import './caption.ts';

export { getTask, taskNames } from './registry.ts';
export type { EpochPlan, TaskData, TrainingTask } from './types.ts';
