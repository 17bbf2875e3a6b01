// Importing a task file registers it; this list is the only place that names them all.
import './translation.ts';
import './caption.ts';
import './lm.ts';

export { getTask, taskNames } from './registry.ts';
export type { LmEpochMetrics, LmResult } from './lm.ts';
export type { EpochMetrics, Seq2SeqResult } from './seq2seq.ts';
export type { EpochBatches, TaskData, TaskStart, TaskTraining, TrainingTask } from './types.ts';
